import type { RunRecord } from './run-record.js';

/** The sessions tools' vocabulary (sessions.ts serves it). */

export const SEND_MODES = ['fire-and-forget', 'wait', 'ping-pong'] as const;
export type SendMode = (typeof SEND_MODES)[number];
export const MAX_SEND_WAIT_MS = 50_000;
export const MAX_HISTORY_PAGE = 50;

export interface SendOptions {
  mode?: SendMode;
  timeoutMs?: number;
  /** ping-pong: how many replies to collect (0–5, default 3). */
  maxTurns?: number;
}

export interface SendOutcome {
  runId: string;
  mode: SendMode;
  delivered: 'queued';
  replies: { step: number; text: string; toolCalls: string[] }[];
  status: RunRecord['status'];
  endReason: RunRecord['endReason'];
  timedOut: boolean;
}

export interface HistoryPage {
  runId: string;
  offset: number;
  entries: unknown[];
  total: number;
  more: number;
}

