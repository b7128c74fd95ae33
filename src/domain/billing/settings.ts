// Billing's settings from the config's `billing:` section (defaults in src/config.ts).
export interface BillingSettings {
  /** A hold older than this is released (charging nothing) by the sweeper and at start-up. */
  hold_expiry_seconds: number;
  /** How often the sweeper releases expired holds, heartbeats and charges period fees. */
  sweep_interval_seconds: number;
  /** A server whose heartbeat is older than this is taken as dead, and its holds are released. */
  instance_timeout_seconds: number;
}
