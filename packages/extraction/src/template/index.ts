export { learnSiteTemplate } from './learn.js';
export { labelTemplate, readWithTemplate } from './read.js';
export { nextTemplateLearningAt, TEMPLATE_MAX_PAGES, TEMPLATE_MIN_PAGES } from './schedule.js';
export type { SiteTemplate, TemplateField, TemplatePath, TemplateReading } from './types.js';
