import { describe, expect, it } from 'vitest';
import { isRequirementHeading } from './requirement-headings.js';

describe('isRequirementHeading', () => {
  it('takes the headings pages use for requirements, in any case and punctuation', () => {
    for (const heading of [
      "What we're looking for",
      'What We’re Looking For:',
      'What we require',
      "What you'll need",
      'What you will bring',
      'What you have',
      'Requirements',
      'Job requirements',
      'Minimum qualifications',
      'Preferred qualifications',
      'Qualifications',
      'Must have',
      'Must-haves',
      'Skills',
      'Skills & experience',
      'Technical skills',
      'Knowledge, skills and abilities',
      'About you',
      'Who you are',
      "Who we're looking for",
      'You have',
      'You bring',
      'Your profile',
      'The ideal candidate',
      '• Requirements',
      'Ihr Profil',
      'Dein Profil',
      'Profil',
      'Anforderungen',
      'Das bringst du mit',
      'Voraussetzungen',
      'Profil recherché',
      'Votre profil',
      'Jouw profiel',
      'Requisitos',
    ]) {
      expect(isRequirementHeading(heading), heading).toBe(true);
    }
  });

  it('leaves responsibilities, benefits and nice-to-haves alone', () => {
    for (const heading of [
      "What you'll do",
      'What you will do',
      "What you'll get",
      "What you'll have", // perks, on most pages that use it
      'What we offer',
      'Nice to have',
      'Nice-to-haves',
      'Bonus points',
      'Benefits',
      'Responsibilities',
      'About us',
      'About your team',
      'The role',
      'Wir bieten',
      'Skillset', // not "Skills"
    ]) {
      expect(isRequirementHeading(heading), heading).toBe(false);
    }
  });
});
