/** Said by a form being edited when its settings were changed in another tab or browser meanwhile. */
export function ChangedElsewhere({ onDiscard }: { onDiscard: () => void }) {
  return (
    <div className="notice" role="status">
      <p>Changed elsewhere since you opened this page (another tab or browser). Saving replaces those settings with what you see here.</p>
      <button type="button" onClick={onDiscard}>
        Show the new values
      </button>
    </div>
  );
}
