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
