import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { afdHome, afdModelsDir } from './afdHome.js';

describe('afdHome', () => {
  it('is $AFD_HOME when set, else ~/.afd (an empty AFD_HOME counts as unset)', () => {
    expect(afdHome({ AFD_HOME: '/x/y' })).toBe('/x/y');
    expect(afdHome({})).toBe(join(homedir(), '.afd'));
    expect(afdHome({ AFD_HOME: '' })).toBe(join(homedir(), '.afd'));
  });

  it('keeps models in <home>/models', () => {
    expect(afdModelsDir('/x/y')).toBe('/x/y/models');
  });
});
