/** Keeps the last `cap` bytes of a stream and counts all of it: the jail's stdout/stderr tails. */
export class TailBuffer {
  private chunks: Buffer[] = [];
  private held = 0;
  total = 0;

  constructor(private readonly cap: number) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    this.chunks.push(chunk);
    this.held += chunk.length;
    while (this.held - (this.chunks[0]?.length ?? 0) >= this.cap && this.chunks.length > 1) {
      this.held -= this.chunks.shift()!.length;
    }
  }

  /** Forgets everything held and counted (a pool slot's waiter line, before its run). */
  clear(): void {
    this.chunks = [];
    this.held = 0;
    this.total = 0;
  }

  /** Whether what was pushed last ends with `suffix`. */
  endsWith(suffix: Buffer): boolean {
    const all = Buffer.concat(this.chunks);
    return all.length >= suffix.length && all.subarray(all.length - suffix.length).equals(suffix);
  }

  /** Drops the last `n` bytes (a marker that was not the stream's), from the held and the count. */
  dropEnd(n: number): void {
    const all = Buffer.concat(this.chunks);
    const keep = Math.max(0, all.length - n);
    this.chunks = keep > 0 ? [all.subarray(0, keep)] : [];
    this.held = keep;
    this.total = Math.max(0, this.total - n);
  }

  text(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.cap)).toString('utf8');
  }
}
