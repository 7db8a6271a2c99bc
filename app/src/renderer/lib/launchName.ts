import { countOf, type LaunchProgress } from '@afd/shared';

/** What a launch runs, e.g. "2A2F" or "2 colocated replicas". */
export function launchName(p: Pick<LaunchProgress, 'ranks'>): string {
  if (p.ranks.some((r) => r.role === 'colocated')) return countOf(p.ranks.length, 'colocated replica');
  return `${p.ranks.filter((r) => r.role === 'attention').length}A${p.ranks.filter((r) => r.role === 'ffn').length}F`;
}
