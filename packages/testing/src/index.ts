export * from './career-site.js';
export * from './database.js';
export * from './processes.js';
export * from './redis.js';
export * from './ats/index.js';
