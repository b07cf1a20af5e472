export * from './server.js';
export {
  ATS_COMPANIES,
  ATS_PLACES,
  generateAtsPostings,
  type AtsEmployment,
  type AtsPlace,
  type AtsPostingSpec,
  type AtsSalary,
  type AtsSalaryPeriod,
  type AtsWorkplace,
} from './content.js';
export * from './greenhouse.js';
export * from './lever.js';
export * from './ashby.js';
export * from './smartrecruiters.js';
export * from './recruitee.js';
export * from './bamboohr.js';
export * from './breezy.js';
export * from './teamtailor.js';
export * from './workable.js';
export * from './personio.js';
export * from './workday.js';
