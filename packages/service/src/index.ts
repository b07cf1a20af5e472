/**
 * What every Gleaner process starts and stops with: its settings read once, its connections,
 * its health endpoint, tracing, and a bounded shutdown of named steps (`startService`).
 */
export {
  startService,
  ServiceStartError,
  type ServiceConfig,
  type ServiceContext,
  type ServiceDefinition,
  type ServicePart,
  type StartResult,
} from './start-service.js';
export {
  startHealthServer,
  type HealthCheck,
  type HealthReport,
  type HealthServer,
} from './health-server.js';
export { startTelemetry, type Telemetry } from './telemetry.js';
export {
  budgetKey,
  claimConnectionBudget,
  ConnectionBudgetExceededError,
  serverConnectionBudget,
  BUDGET_MARGIN,
  CLAIM_TTL_MS,
  CLAIM_WAIT_MS,
  type BudgetClaim,
  type BudgetClaimOptions,
  type BudgetSource,
} from './connection-budget.js';
export {
  createShutdown,
  shutdownBoundMs,
  SHUTDOWN_CONNECTIONS_MS,
  SHUTDOWN_FLUSH_MS,
  SHUTDOWN_RELEASE_MS,
  type Shutdown,
  type ShutdownLogger,
  type ShutdownPhase,
  type ShutdownReport,
  type ShutdownStep,
  type ShutdownStepReport,
} from './shutdown.js';
