// What a page that cannot be shown leaves instead of a blank app: its code failed to load (the
// server out of reach, or an upgrade since the tab opened renamed the files) or it failed to render.
// The header and navigation stay around it; Reload fetches the dashboard afresh.
import { Component, type ReactNode } from 'react';

export class PageErrorBoundary extends Component<{ children: ReactNode }, { failed: boolean }> {
  state = { failed: false };

  static getDerivedStateFromError() {
    return { failed: true };
  }

  render() {
    if (!this.state.failed) return this.props.children;
    return (
      <div className="error" role="alert">
        <p>
          <strong>This page could not be loaded.</strong> The server may be out of reach, or the dashboard was updated since this tab opened
          it.
        </p>
        <button type="button" onClick={() => location.reload()}>
          Reload
        </button>
      </div>
    );
  }
}
