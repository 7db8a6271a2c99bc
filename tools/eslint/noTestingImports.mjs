// ESLint rule afd-testing/no-testing-imports: production code imports nothing from a
// testing/ folder (test and lab code: helpers, fakes, test programs, benchmark pages).
// Checked: import and export ... from, import(), import('...') types, and require().
// eslint.config.mjs decides which files are production code.

/** A module path with a `testing` folder in it: '../testing/x.js', './testing', '@afd/native/testing/y'. */
const TESTING = /(^|\/)testing(\/|$)/;

/** @type {import('eslint').Rule.RuleModule} */
export const noTestingImports = {
  meta: {
    type: 'problem',
    docs: { description: 'production code may not import from a testing/ folder' },
    schema: [],
    messages: {
      testing: '"{{path}}" is in a testing/ folder (test and lab code): production code may not import it. Move what production needs out of testing/, or this code into a test or a testing/ folder.',
    },
  },
  create(context) {
    const check = (source) => {
      if (source && source.type === 'Literal' && typeof source.value === 'string' && TESTING.test(source.value)) {
        context.report({ node: source, messageId: 'testing', data: { path: source.value } });
      }
    };
    return {
      ImportDeclaration: (node) => check(node.source),
      ExportNamedDeclaration: (node) => check(node.source),
      ExportAllDeclaration: (node) => check(node.source),
      ImportExpression: (node) => check(node.source),
      TSImportType: (node) => check(node.argument?.type === 'TSLiteralType' ? node.argument.literal : node.argument),
      CallExpression: (node) => {
        if (node.callee.type === 'Identifier' && node.callee.name === 'require') check(node.arguments[0]);
      },
    };
  },
};
