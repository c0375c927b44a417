/**
 * The operator's admission switch: paused or open, kept in $BRIG_HOME/admission.json so a
 * restarted supervisor is in the state the operator left (a pause is not undone by a crash).
 * Each change is ledgered with who, when and the reason's sha256 (the reason itself is kept
 * nowhere, INV-7). What a pause means for a spawn is decided in admission.ts; this file only
 * holds and persists the state. Fails loudly: a file that is not what brig wrote refuses the
 * start (`state_corrupt`, naming the file) rather than guessing open.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { z } from 'zod';
import { writeFileAtomicSync } from '../util/atomic-file.js';
import { BrigError } from '../util/errors.js';
import type { Ledger } from '../ledger/index.js';
import type { AdmissionChange } from '../protocol/index.js';
import type { Clock } from './ports.js';

const AdmissionFileSchema = z.strictObject({
  paused: z.boolean(),
  since: z.string().nullable(),
  by: z.string().max(128).nullable(),
  reasonHash: z.string().regex(/^[0-9a-f]{64}$/).nullable(),
});

/** The state as kept on disk (AdmissionState without the queue count, which is the table's). */
export type AdmissionRecord = z.infer<typeof AdmissionFileSchema>;

export const OPEN_ADMISSION: AdmissionRecord = Object.freeze({ paused: false, since: null, by: null, reasonHash: null });

/** The kept state, or open when there is no file; state_corrupt when the file is not brig's. */
export function readAdmission(file: string): AdmissionRecord {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { ...OPEN_ADMISSION };
    throw e;
  }
  let parsed: ReturnType<typeof AdmissionFileSchema.safeParse>;
  try {
    parsed = AdmissionFileSchema.safeParse(JSON.parse(text));
  } catch {
    parsed = AdmissionFileSchema.safeParse(undefined);
  }
  if (!parsed.success) {
    throw new BrigError('state_corrupt', `${file} is not the admission state brig writes`, {
      data: { file },
      hint: `Fix or remove ${file} (removed: admission is open), then start again; \`brig admission pause\` writes it anew.`,
    });
  }
  return parsed.data;
}

export const reasonHash = (reason: string | undefined): string | null => (reason === undefined || reason === '' ? null : createHash('sha256').update(reason).digest('hex'));

/**
 * The switch over one file: read once when made, written (atomically) on each change. A
 * repeat (pause while paused) keeps the first pause's time and is not ledgered again.
 */
export class AdmissionSwitch {
  #state: AdmissionRecord;

  constructor(
    private readonly file: string | undefined,
    private readonly ledger: Pick<Ledger, 'append'>,
    private readonly clock: Clock,
  ) {
    this.#state = file ? readAdmission(file) : { ...OPEN_ADMISSION };
  }

  get state(): AdmissionRecord {
    return this.#state;
  }

  get paused(): boolean {
    return this.#state.paused;
  }

  /** Sets the state; true when it changed (then it is on disk and ledgered). */
  set(paused: boolean, c: AdmissionChange, queued: number | null): boolean {
    if (this.#state.paused === paused) return false;
    const next: AdmissionRecord = { paused, since: this.clock.now().toISOString(), by: (c.by ?? 'operator').slice(0, 128), reasonHash: reasonHash(c.reason) };
    // On disk before it is in force: a crash right after the answer still finds it.
    if (this.file) writeFileAtomicSync(this.file, `${JSON.stringify(next)}\n`);
    this.#state = next;
    this.ledger.append({ type: paused ? 'admission.paused' : 'admission.resumed', by: next.by, reasonHash: next.reasonHash, queued });
    return true;
  }
}
