// One source, two builds: AISDK=5 uses ai@5 + @ai-sdk/react@2, AISDK=7 uses ai@7 + @ai-sdk/react@4.
// The aliases apply to every import, including @ai-sdk/react's own `import ... from 'ai'`.
import { defineConfig } from 'vite';

const major = process.env.AISDK === '7' ? '7' : '5';
const packages = major === '7'
  ? { ai: 'ai7', react: 'ai-sdk-react4' }
  : { ai: 'ai5', react: 'ai-sdk-react2' };

export default defineConfig({
  base: './',
  define: { __AISDK_MAJOR__: JSON.stringify(major) },
  resolve: {
    alias: [
      { find: /^ai$/, replacement: packages.ai },
      { find: /^@ai-sdk\/react$/, replacement: packages.react },
    ],
  },
  oxc: { jsx: { runtime: 'automatic' } },
  build: { emptyOutDir: true, sourcemap: false },
  logLevel: 'warn',
});
