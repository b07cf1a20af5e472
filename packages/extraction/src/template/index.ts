export { learnSiteTemplate } from './learn.js';
export { labelTemplate, readWithTemplate } from './read.js';
export type { SiteTemplate, TemplateField, TemplatePath, TemplateReading } from './types.js';
