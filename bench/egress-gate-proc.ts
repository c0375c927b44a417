/** bench/egress.bench.ts's gate, in a process of its own (as the supervisor's would be): argv dir port dnsServer; prints the socket path. */
import { EgressGate, makeResolver, systemClassifier } from '../src/egress/index.js';
import { DEFAULT_EGRESS_BUDGETS } from '../src/lease/index.js';

const [dir, port, dnsServer] = process.argv.slice(2) as [string, string, string];
const gate = new EgressGate({ ledger: { append: () => {} }, resolver: makeResolver([dnsServer]), classify: systemClassifier({ testPublicCidrs: ['127.0.0.2/32'] }), policy: { denyHosts: [] } });
const budgets = { ...DEFAULT_EGRESS_BUDGETS, connections: 1_000_000, bytesDown: Number.MAX_SAFE_INTEGER, bytesUp: Number.MAX_SAFE_INTEGER };
const h = await gate.openRun({ runId: 'bench', leaseId: 'bench', dir, grant: { rules: [{ id: 'b', hosts: ['allowed.test'], ports: [Number(port)], scheme: 'https', tls: 'tunnel', websocket: false }], budgets } });
process.send?.(h.socketPath);
process.on('disconnect', () => void gate.close().then(() => process.exit(0)));
