import type { EndReason, KilledBy, RunKind, TerminalStatus } from './runs.js';
import type { GraphStreamEvent } from './graphs.js';

/** Supervisor events: content-free (INV-7) — ids, counts, enums and durations only. */

export interface ProgressEvent {
  runId: string;
  agentId: string;
  progressLine: string | null;
  elapsedMs: number;
  stepsExecuted: number;
  timestamp: string;
  /** The tool an agent child is running (a name of the closed tool set), else null. */
  activeTool?: string | null;
}

/** Common to every supervisor event: content-free ids, counts, enums, durations. */
interface EventBase {
  runId: string;
  rootRunId: string;
  /** Run ids from the root. */
  path: string[];
  depth: number;
  timestamp: string;
}

export type SupervisorEvent =
  | (EventBase & { type: 'spawned'; parentRunId: string | null; agent: string; kind: RunKind; queued: boolean; parentStep: number | null })
  | (EventBase & { type: 'started' })
  | (EventBase & { type: 'progress'; progress: ProgressEvent })
  | (EventBase & { type: 'completed'; runtimeMs: number; stepsExecuted: number })
  | (EventBase & { type: 'failed'; terminalStatus: TerminalStatus; endReason: EndReason; code: string | null })
  | (EventBase & {
      type: 'lifecycle_ended';
      endReason: EndReason;
      killedBy: KilledBy | null;
      runtimeMs: number;
      stepsExecuted: number;
      outputBytes: number;
      resumable: boolean;
    })
  | (EventBase & { type: 'steered'; mode: 'inject' | 'respawn'; newRunId: string | null });

export type SupervisorEventType = SupervisorEvent['type'];

/**
 * What the API's event stream (`GET /v1/events`) carries: the runs' events and the graphs'
 * (`graph.*`), numbered in one ring. Both content-free (INV-7).
 */
export type StreamEvent = SupervisorEvent | GraphStreamEvent;

export function isGraphEvent(ev: StreamEvent): ev is GraphStreamEvent {
  return ev.type.startsWith('graph.');
}
