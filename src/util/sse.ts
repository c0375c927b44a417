/**
 * A small incremental server-sent-events parser (the WHATWG event-stream rules brig needs):
 * bytes in any fragmentation → events. Lines end in LF, CRLF or CR (a CRLF split across two
 * chunks counts once); `data:` lines of one event join with LF; `:` lines are comments; `id`
 * sets the last event id every later event carries (brig's event client resumes with it as
 * `Last-Event-ID`; a model stream is never reconnected); `retry` is ignored. UTF-8 split across chunks is
 * decoded correctly. Pure: no I/O, no timers.
 */

export interface SseEvent {
  /** `message` when the stream named none. */
  event: string;
  data: string;
  /** The stream's last event id when this event was dispatched (absent until an `id:` line). */
  id?: string;
}

export class SseParser {
  private readonly decoder = new TextDecoder('utf-8');
  private buf = '';
  private skipLf = false;
  private eventName = '';
  private data: string[] = [];
  private hasData = false;
  private lastId = '';

  /** Feeds a chunk; returns the events it completed. */
  push(chunk: Uint8Array | string): SseEvent[] {
    this.buf += typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    return this.drain();
  }

  /** The end of the stream: a last event not followed by a blank line is still delivered. */
  end(): SseEvent[] {
    this.buf += this.decoder.decode();
    const out = this.drain();
    if (this.buf.length > 0) {
      this.line(this.buf, out);
      this.buf = '';
    }
    this.dispatch(out);
    return out;
  }

  private drain(): SseEvent[] {
    const out: SseEvent[] = [];
    let start = 0;
    for (let i = 0; i < this.buf.length; i++) {
      const c = this.buf.charCodeAt(i);
      if (c === 10 && this.skipLf && i === start) {
        this.skipLf = false;
        start = i + 1;
        continue;
      }
      this.skipLf = false;
      if (c !== 10 && c !== 13) continue;
      this.line(this.buf.slice(start, i), out);
      if (c === 13) {
        if (i + 1 < this.buf.length) {
          if (this.buf.charCodeAt(i + 1) === 10) i++;
        } else this.skipLf = true;
      }
      start = i + 1;
    }
    this.buf = this.buf.slice(start);
    return out;
  }

  private line(line: string, out: SseEvent[]): void {
    if (line.length === 0) return this.dispatch(out);
    if (line.charCodeAt(0) === 58) return; // ':' comment (keep-alives)
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') {
      this.data.push(value);
      this.hasData = true;
    } else if (field === 'event') this.eventName = value;
    else if (field === 'id' && !value.includes('\0')) this.lastId = value;
  }

  private dispatch(out: SseEvent[]): void {
    if (this.hasData) out.push({ event: this.eventName || 'message', data: this.data.join('\n'), ...(this.lastId ? { id: this.lastId } : {}) });
    this.eventName = '';
    this.data = [];
    this.hasData = false;
  }
}
