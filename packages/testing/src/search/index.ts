export {
  generateSearchJobs,
  matchesAllWords,
  matchesLocation,
  matchesPhrase,
  type SearchJob,
  type SearchPlace,
} from './catalogue.js';
export * from './adzuna.js';
export * from './usajobs.js';
export * from './remotive.js';
