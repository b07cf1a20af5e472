export { createSchedulerLoop, type SchedulerLoopOptions, type SchedulerStatus } from './loop.js';
