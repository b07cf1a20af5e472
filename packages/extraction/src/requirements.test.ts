import { describe, expect, it } from 'vitest';
import { requirementsFromHtml as requirementsOf } from './requirements.js';

describe('requirementsFromBlocks', () => {
  it('reads the list under a requirements heading, up to the next heading', () => {
    expect(
      requirementsOf(
        '<p>Intro</p><h3>Requirements</h3><ul><li>Go</li><li>SQL</li></ul><h3>Benefits</h3><ul><li>Cake</li></ul>',
      ),
    ).toBe('Go\nSQL');
  });

  it('recognises the usual headings, as h-tags, bold lines or lines ending in a colon', () => {
    const list = '<ul><li>One</li><li>Two</li></ul>';
    for (const heading of [
      '<h2>Qualifications</h2>',
      "<h4>What you'll need</h4>",
      '<p><strong>What We’re Looking For</strong></p>',
      '<div><b>Must have:</b></div>',
      '<p>Minimum qualifications:</p>',
      '<h3>About you</h3>',
      '<h3>Your profile</h3>',
      '<h3>Who you are</h3>',
      '<h3>Skills &amp; experience</h3>',
    ]) {
      expect(requirementsOf(`<p>Intro.</p>${heading}${list}<h3>Benefits</h3>`), heading).toBe(
        'One\nTwo',
      );
    }
  });

  it('does not mistake other sections for requirements', () => {
    expect(
      requirementsOf(
        "<h3>What you'll do</h3><ul><li>Build</li></ul><h3>What we offer</h3><ul><li>Cake</li></ul><h3>Nice to have</h3><ul><li>Rust</li></ul>",
      ),
    ).toBeNull();
  });

  it('joins several requirement sections and reads plain-text descriptions', () => {
    expect(
      requirementsOf(
        '<h3>Minimum qualifications</h3><ul><li>A</li></ul><h3>Preferred qualifications</h3><ul><li>B</li></ul><h3>About us</h3><p>C</p>',
      ),
    ).toBe('A\nB');
    expect(
      requirementsOf(
        'About\nWe build.\n\nQualifications:\n- Go\n• SQL\n\nWe are an equal opportunity employer.',
      ),
    ).toBe('Go\nSQL');
  });

  it('takes an inline "Requirements: …" line, and stops at a closing paragraph after the list', () => {
    expect(
      requirementsOf('<p>Requirements: a valid licence and a car.</p><p>Apply today.</p>'),
    ).toBe('a valid licence and a car.');
    expect(
      requirementsOf(
        "<h3>Requirements</h3><ul><li>Go</li></ul><p>Don't meet every requirement? Apply anyway.</p>",
      ),
    ).toBe('Go');
  });
});
