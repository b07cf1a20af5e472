export * from './types.js';
export * from './registry.js';
export {
  careerSiteAdapter,
  careerSiteConfig,
  externalIdFromUrl,
  type CareerSiteConfig,
} from './adapters/career-site.js';
export {
  checkDiscoveredUrl,
  discoveryRefusalCodes,
  type DiscoveredUrl,
  type DiscoveryRefusalCode,
  type DiscoveryRefusals,
  type RefusedUrl,
} from './adapters/discovered-url.js';
export {
  greenhouseAdapter,
  greenhouseConfig,
  GREENHOUSE_API,
  type GreenhouseConfig,
} from './adapters/greenhouse.js';
export {
  leverAdapter,
  leverConfig,
  leverBaseUrl,
  LEVER_API,
  type LeverConfig,
} from './adapters/lever.js';
export { ashbyAdapter, ashbyConfig, ASHBY_API, type AshbyConfig } from './adapters/ashby.js';
export {
  smartRecruitersAdapter,
  smartRecruitersConfig,
  SMARTRECRUITERS_API,
  type SmartRecruitersConfig,
} from './adapters/smartrecruiters.js';
export {
  recruiteeAdapter,
  recruiteeConfig,
  recruiteeBaseUrl,
  type RecruiteeConfig,
} from './adapters/recruitee.js';
export {
  bambooHrAdapter,
  bambooHrConfig,
  bambooHrBaseUrl,
  type BambooHrConfig,
} from './adapters/bamboohr.js';
export {
  breezyAdapter,
  breezyConfig,
  breezyBaseUrl,
  type BreezyConfig,
} from './adapters/breezy.js';
export {
  teamtailorAdapter,
  teamtailorConfig,
  teamtailorBaseUrl,
  type TeamtailorConfig,
  type TeamtailorItem,
} from './adapters/teamtailor.js';
export {
  AtsRequestError,
  atsErrorCodes,
  type AtsErrorCode,
  type AtsRequestErrorDetails,
} from './adapters/ats-request-error.js';
export {
  workableAdapter,
  workableConfig,
  WORKABLE_API,
  type WorkableConfig,
} from './adapters/workable.js';
export {
  workdayAdapter,
  workdayConfig,
  workdayBaseUrl,
  workdaySiteFromUrl,
  WORKDAY_PAGE_SIZE,
  WORKDAY_RESULT_CAP,
  type WorkdayConfig,
} from './adapters/workday.js';
export {
  personioAdapter,
  personioConfig,
  personioBaseUrl,
  type PersonioConfig,
} from './adapters/personio.js';
export {
  adzunaAdapter,
  adzunaConfig,
  adzunaCountries,
  ADZUNA_API,
  type AdzunaConfig,
} from './adapters/adzuna.js';
export {
  usaJobsAdapter,
  usaJobsConfig,
  USAJOBS_API,
  USAJOBS_RESULT_CAP,
  type UsaJobsConfig,
} from './adapters/usajobs.js';
export {
  remotiveAdapter,
  remotiveConfig,
  REMOTIVE_API,
  type RemotiveConfig,
} from './adapters/remotive.js';
export {
  resolveSearch,
  savedSearchShape,
  SourceCredentialsMissingError,
  SOURCE_CREDENTIALS_MISSING,
  type EffectiveSearch,
} from './adapters/search-api.js';
export {
  atsJobKey,
  normaliseCompany,
  normaliseLocations,
  normaliseTitle,
  sameJob,
  sameJobByFields,
  type JobRecord,
  type SameJobVerdict,
} from './same-job.js';
