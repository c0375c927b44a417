/**
 * Which profile a run's lease is issued under, when the request names none: lease policy,
 * decided here and nowhere else. A child inherits its parent's profile (a `worker`'s child
 * cannot become `root` by saying nothing); an operator's spawn gets `root`, the operator's
 * ceiling. Attenuation still bounds the result by the parent's grant either way.
 */
export const OPERATOR_PROFILE = 'root';

export function profileFor(requested: string | undefined, parentProfile: string | undefined): string {
  return requested ?? parentProfile ?? OPERATOR_PROFILE;
}
