/**
 * The tally, pure and deterministic: each voter's ballot (a JSON value, or nothing) → the
 * `field` read by a dotted path → checked against `choices` exactly (no case folding, no
 * trimming: a ballot that does not name a choice is invalid, never guessed) → counts → the
 * rule (plurality, majority of the valid ballots, unanimous, quorum k) and the tie rule.
 * Invalid and absent ballots are counted and reported per voter.
 */
import type { TallyOutcome, TallySpec } from '../protocol/index.js';

export type Ballot = { voter: string; value: unknown; state: 'absent' | 'unreadable' | 'read' };

/** `$.a.b` read from a JSON value; undefined when a step is missing. */
export function readField(value: unknown, field: string): unknown {
  let v: unknown = value;
  for (const k of field.split('.').slice(1)) {
    if (!v || typeof v !== 'object' || Array.isArray(v) || !Object.hasOwn(v, k)) return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

export function tally(spec: TallySpec, ballots: readonly Ballot[]): TallyOutcome {
  const counts: Record<string, number> = Object.fromEntries(spec.choices.map((c) => [c, 0]));
  const per: TallyOutcome['ballots'] = [];
  for (const b of ballots) {
    if (b.state !== 'read') {
      per.push({ voter: b.voter, choice: null, why: b.state });
      continue;
    }
    if (b.value === undefined) {
      per.push({ voter: b.voter, choice: null, why: 'not_json' });
      continue;
    }
    const f = readField(b.value, spec.field);
    if (f === undefined) per.push({ voter: b.voter, choice: null, why: 'no_field' });
    else if (typeof f !== 'string' || !spec.choices.includes(f)) per.push({ voter: b.voter, choice: null, why: 'not_a_choice' });
    else {
      counts[f]!++;
      per.push({ voter: b.voter, choice: f, why: 'ok' });
    }
  }
  const valid = per.filter((p) => p.why === 'ok').length;
  const absent = per.filter((p) => p.why === 'absent').length;
  const invalid = per.length - valid - absent;
  const base = { counts, valid, invalid, absent, ballots: per };
  if (valid < spec.min_valid) return { ...base, winner: null, outcome: 'too_few_valid' };
  const top = Math.max(...Object.values(counts));
  const leaders = spec.choices.filter((c) => counts[c] === top);
  const pick = (): TallyOutcome => {
    if (leaders.length > 1 && spec.tie === 'fail') return { ...base, winner: null, outcome: 'tie' };
    return { ...base, winner: leaders[0]!, outcome: 'decided' };
  };
  const rule = spec.rule;
  if (rule === 'plurality') return pick();
  if (rule === 'majority') return top * 2 > valid ? pick() : { ...base, winner: null, outcome: 'no_majority' };
  if (rule === 'unanimous') return top === valid ? pick() : { ...base, winner: null, outcome: 'not_unanimous' };
  return top >= rule.quorum ? pick() : { ...base, winner: null, outcome: 'no_quorum' };
}

/** One line for the envelope: `BUY 2 · HOLD 1 · invalid 1 · absent 0 → BUY`. */
export function tallyLine(t: TallyOutcome): string {
  const parts = Object.entries(t.counts).map(([c, n]) => `${c} ${n}`);
  return `${parts.join(' · ')} · invalid ${t.invalid} · absent ${t.absent} → ${t.winner ?? t.outcome}`;
}
