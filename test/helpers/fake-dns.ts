/**
 * A fake DNS server on loopback for the egress tests (UDP, A and AAAA only): a table of names,
 * answers that may alternate per query (rebinding), names that never answer, and a count of
 * queries per name (a denied name must cause none).
 */
import dgram from 'node:dgram';
import net from 'node:net';

export type DnsAnswer = string[] | { alternate: string[][] } | 'silent';

export interface FakeDns {
  /** `host:port` for setServers. */
  server: string;
  queries: Map<string, number>;
  close(): Promise<void>;
}

function encodeName(buf: Buffer, at: number): { name: string; end: number } {
  const labels: string[] = [];
  let p = at;
  while (buf[p] !== 0 && p < buf.length) {
    const n = buf[p]!;
    labels.push(buf.subarray(p + 1, p + 1 + n).toString('latin1'));
    p += 1 + n;
  }
  return { name: labels.join('.').toLowerCase(), end: p + 1 };
}

function v6bytes(a: string): Buffer {
  const [head, tail] = a.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = [...h, ...new Array(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

export async function startFakeDns(table: Record<string, DnsAnswer>, host = '127.0.0.53'): Promise<FakeDns> {
  const sock = dgram.createSocket('udp4');
  const queries = new Map<string, number>();
  const turns = new Map<string, number>();
  sock.on('message', (msg, rinfo) => {
    if (msg.length < 12) return;
    const { name, end } = encodeName(msg, 12);
    const qtype = msg.readUInt16BE(end);
    queries.set(name, (queries.get(name) ?? 0) + 1);
    const entry = table[name];
    if (entry === 'silent') return;
    let addrs: string[] = [];
    if (Array.isArray(entry)) addrs = entry;
    else if (entry) {
      const k = turns.get(`${name}/${qtype}`) ?? 0;
      turns.set(`${name}/${qtype}`, k + 1);
      addrs = entry.alternate[k % entry.alternate.length]!;
    }
    const want = addrs.filter((a) => (qtype === 1 ? net.isIPv4(a) : qtype === 28 ? net.isIPv6(a) : false));
    const question = msg.subarray(12, end + 4);
    const header = Buffer.alloc(12);
    header.writeUInt16BE(msg.readUInt16BE(0), 0);
    header.writeUInt16BE(entry === undefined ? 0x8183 : 0x8180, 2); // NXDOMAIN for unknown names
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(want.length, 6);
    const answers = want.map((a) => {
      const rdata = qtype === 1 ? Buffer.from(a.split('.').map(Number)) : v6bytes(a);
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0);
      rr.writeUInt16BE(qtype, 2);
      rr.writeUInt16BE(1, 4);
      rr.writeUInt32BE(0, 6);
      rr.writeUInt16BE(rdata.length, 10);
      return Buffer.concat([rr, rdata]);
    });
    sock.send(Buffer.concat([header, question, ...answers]), rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => sock.bind(0, host, () => resolve()));
  const port = sock.address().port;
  return { server: `${host}:${port}`, queries, close: () => new Promise((r) => sock.close(() => r())) };
}
