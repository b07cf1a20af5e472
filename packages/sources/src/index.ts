export * from './types.js';
export * from './registry.js';
export { careerSiteAdapter, careerSiteConfig, externalIdFromUrl, type CareerSiteConfig } from './adapters/career-site.js';
