export {
  createSiteGate,
  siteGateKeys,
  type AcquireOptions,
  type GateDecision,
  type GateDenyReason,
  type GateLease,
  type GateOutcome,
  type GateReservations,
  type GateState,
  type SiteGate,
  type SiteGateKeys,
  type SiteGateOptions,
  type SitePolicy,
} from './site-gate.js';
export { outcomeOfError, outcomeOfResult } from './outcome.js';
