/**
 * Catches render errors of a screen so a bug shows a readable message with a way back,
 * never a blank window.
 */
import { Component, type ErrorInfo, type ReactNode } from 'react';

interface Props {
  /** Shown in the message, e.g. the screen name. */
  where: string;
  children: ReactNode;
}

interface State {
  error: Error | null;
}

export class ErrorBoundary extends Component<Props, State> {
  override state: State = { error: null };

  static getDerivedStateFromError(error: Error): State {
    return { error };
  }

  override componentDidCatch(error: Error, info: ErrorInfo): void {
    console.error(`[console] ${this.props.where} crashed`, error, info.componentStack);
  }

  override render(): ReactNode {
    if (!this.state.error) return this.props.children;
    return (
      <div className="error-screen" role="alert" data-testid="error-boundary">
        <h2>{this.props.where} hit an error</h2>
        <p className="muted">The rest of the console keeps running. The error was:</p>
        <pre className="log">{this.state.error.stack ?? this.state.error.message}</pre>
        <button className="btn primary" onClick={() => this.setState({ error: null })}>
          Try again
        </button>
      </div>
    );
  }
}
