/**
 * A ranked plan row's "Use": fills the Topology screen with the row's topology; disabled
 * with the reason in its tooltip where the console cannot launch the row (the N-GPU table
 * and the mixed-cluster table both use it).
 */
export function PlanUseButton({ index, notLaunchable, label, onUse }: { index: number; notLaunchable: string | null; label: string; onUse: () => void }) {
  return (
    <button className="btn" style={{ padding: '0.1rem 0.5rem' }} data-testid={`plan-use-${index}`} onClick={onUse} disabled={notLaunchable !== null} title={notLaunchable ?? `Fill the Topology screen with ${label}`}>
      Use
    </button>
  );
}
