/**
 * What generated postings are made of: companies, roles with their area and skills, teams, offices,
 * and the sentences of descriptions and requirements. Fixed lists, so a seed always gives the same
 * site.
 */

export const COMPANIES = [
  'Northwind Analytics',
  'Lumen Freight',
  'Brightwell Health',
  'Copperleaf Energy',
  'Tessellate Labs',
] as const;

export const SENIORITIES = [
  '',
  '',
  '',
  'Senior ',
  'Senior ',
  'Staff ',
  'Principal ',
  'Junior ',
  'Lead ',
];

export interface Role {
  name: string;
  area: string;
  skills: readonly string[];
}

/** name | area of work | skills */
export const ROLES: readonly Role[] = [
  'Backend Engineer | backend services | Go, PostgreSQL, Kafka, gRPC',
  'Frontend Engineer | web applications | TypeScript, React, CSS, accessibility',
  'Full-Stack Developer | product features | TypeScript, Node.js, React, SQL',
  'Data Engineer | data pipelines | Python, Spark, Airflow, dbt',
  'Data Scientist | forecasting models | Python, statistics, SQL, experimentation',
  'Machine Learning Engineer | model serving | PyTorch, Python, Kubernetes, MLOps',
  'Site Reliability Engineer | production infrastructure | Kubernetes, Terraform, Prometheus, Linux',
  'Security Engineer | application security | threat modelling, OWASP, cloud IAM, Go',
  'Mobile Engineer (iOS) | our iOS app | Swift, SwiftUI, Xcode, CI for mobile',
  'QA Engineer | test automation | Playwright, TypeScript, test design, CI',
  'Product Manager | the product roadmap | discovery, analytics, roadmapping, SQL',
  'Product Designer | user experience | Figma, prototyping, user research, design systems',
  'Technical Writer | developer documentation | docs-as-code, Markdown, APIs, editing',
  'Account Executive | mid-market sales | SaaS sales, Salesforce, negotiation, forecasting',
  'Sales & Partnerships Manager | channel partnerships | partner programmes, CRM, contracts, negotiation',
  'Customer Success Manager | enterprise accounts | onboarding, renewals, Gainsight, communication',
  'Support Engineer | customer support | troubleshooting, SQL, APIs, Zendesk',
  'Financial Analyst | planning & analysis | Excel, financial modelling, SQL, reporting',
  'Recruiter | technical hiring | sourcing, Greenhouse, interviewing, employer branding',
  'Marketing Manager | growth marketing | SEO, lifecycle email, analytics, copywriting',
].map((line) => {
  const [name = '', area = '', skills = ''] = line.split(' | ');
  return { name, area, skills: skills.split(', ') };
});

export const TEAMS = [
  'Payments',
  'Platform',
  'Growth',
  'Search',
  'Logistics',
  'Identity',
  'Billing',
  'Insights',
];

export interface Place {
  city: string;
  region: string | null;
  country: string;
  postalCode: string;
  street: string;
}

/** city | region (may be empty) | country | postal code | street */
export const PLACES: readonly Place[] = [
  'San Francisco | CA | US | 94105 | 201 Mission St',
  'New York | NY | US | 10011 | 85 Tenth Ave',
  'Austin | TX | US | 78701 | 500 W 2nd St',
  'Seattle | WA | US | 98109 | 1100 Dexter Ave N',
  'Chicago | IL | US | 60607 | 1000 W Fulton Market',
  'Boston | MA | US | 02210 | 1 Seaport Ln',
  'London | England | GB | EC2A 4NE | 1 Finsbury Ave',
  'Manchester | England | GB | M1 3LA | 3 Piccadilly Pl',
  'Edinburgh | Scotland | GB | EH3 9QG | 20 Lothian Rd',
  'Berlin | Berlin | DE | 10115 | Invalidenstraße 65',
  'München | Bayern | DE | 80331 | Sendlinger Str. 7',
  'Amsterdam | Noord-Holland | NL | 1017 CE | Herengracht 500',
  'Paris | Île-de-France | FR | 75002 | 12 Rue du Mail',
  'Dublin |  | IE | D02 X285 | 1 Grand Canal Sq',
  'Barcelona | Cataluña | ES | 08018 | Carrer de Pere IV 29',
  'Lisbon |  | PT | 1200-109 | Rua do Alecrim 26',
].map((line) => {
  const [city = '', region = '', country = '', postalCode = '', street = ''] = line.split(' | ');
  return { city, region: region === '' ? null : region, country, postalCode, street };
});

export const CURRENCY_BY_COUNTRY: Record<string, string> = { US: 'USD', GB: 'GBP' }; // others: EUR

export const RESPONSIBILITIES = [
  'Design, build and operate {area} used by thousands of customers every day',
  'Work closely with product, design and engineering to ship improvements to {area} every week',
  'Own problems end to end, from the first sketch to measuring the outcome in production',
  'Break large, ambiguous projects into small steps and deliver them incrementally',
  'Review the work of your peers and help raise the bar for quality across the {team} team',
  'Write clear proposals and decision records so that others can build on your work',
  'Mentor newer colleagues and share what you learn in internal talks',
  'Take part in a fair, well-paid on-call rotation with a strong blameless culture',
  'Talk to customers regularly to understand how they use {area}',
  'Improve the tooling, processes and documentation that the {team} team relies on',
  'Measure what matters and use data to decide what to build next',
  'Keep {area} secure, reliable and fast as we grow into new markets',
];

export const BENEFITS = [
  'Competitive salary and meaningful equity',
  'Private health, dental and vision insurance for you and your dependants',
  '30 days of paid holiday plus public holidays',
  'Learning &amp; development budget of 2,000 per year',
  'Flexible working hours and a remote-friendly culture',
  'Sixteen weeks of fully paid parental leave',
  'A home-office allowance and the equipment of your choice',
  'Company retreats twice a year',
  'Pension or 401(k) matching',
  'Mental health support through a confidential counselling service',
];

export const ABOUT_SENTENCES = [
  '{company} helps organisations make better decisions with their data.',
  'We are a team of about 400 people across Europe and North America.',
  'Our customers include hospitals, retailers, logistics companies and public bodies.',
  'We have been profitable since 2021 and grow sustainably.',
  'We value clear writing, kind feedback and shipping small things often.',
  'Diverse teams build better products, and we are committed to an inclusive workplace.',
  'We welcome applications from people of every background, identity and experience.',
  'You will join a team that cares deeply about craft and about each other.',
];

export const EXPERIENCE_PHRASES = [
  '{years}+ years of professional experience as a {role}',
  'Hands-on experience with {skill1} and {skill2}',
  'Strong working knowledge of {skill3}',
  'Familiarity with {skill4} is a plus',
  'Excellent written and spoken English',
  'A track record of shipping work that customers love',
  'Comfort with ambiguity and a bias for action',
];
