/**
 * Entry of the dashboard benchmark page (?ms=N): the console's index.html with this entry
 * instead of main.tsx, a build of its own (vite mode dashboard-bench, made by
 * app/src/testing/dashboardBench.ts), never part of the console's. Same styles as the console.
 */
import '../../theme.css';
import { mountBench } from './DashboardBench.js';

const rootEl = document.getElementById('root');
if (rootEl) mountBench(rootEl);
