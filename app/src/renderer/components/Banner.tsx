/** A dismissable message strip: every user-caused failure ends up in one of these. */
export interface BannerProps {
  kind: 'err' | 'warn' | 'ok' | 'info';
  message: string;
  onDismiss?: () => void;
  testId?: string;
}

export function Banner({ kind, message, onDismiss, testId }: BannerProps) {
  return (
    <div className={`banner ${kind}`} role={kind === 'err' ? 'alert' : 'status'} data-testid={testId}>
      <div className="banner-text">{message}</div>
      {onDismiss && (
        <button className="btn" onClick={onDismiss} aria-label="Dismiss message">
          ×
        </button>
      )}
    </div>
  );
}
