import { z } from 'zod';
import { END_REASONS, KILLED_BY, RUN_STATUSES, type EndReason, type KilledBy, type RunRecord, type RunStatus } from '../protocol/index.js';

/**
 * A run's life as data (protocol/runs.ts): its statuses, its one end reason (INV-8) and who
 * killed it, and the record persisted at $BRIG_HOME/runs/<id>/run.json. How a run ended is
 * data, never an exception. Here: the schemas of the closed sets, declared against the types.
 */
export const RunStatusSchema = z.enum(RUN_STATUSES) satisfies z.ZodType<RunStatus>;
/** INV-8: every run ends with exactly one of these. */
export const EndReasonSchema = z.enum(END_REASONS) satisfies z.ZodType<EndReason>;
export const KilledBySchema = z.enum(KILLED_BY) satisfies z.ZodType<KilledBy>;

/** The key of a run's jail in the engine (its labels, container, volume, disk, socket directory). */
export const jailKeyOf = (r: Pick<RunRecord, 'id' | 'jailKey'>): string => r.jailKey ?? r.id;
