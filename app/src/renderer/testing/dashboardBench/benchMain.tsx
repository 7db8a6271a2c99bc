/**
 * Entry of the dashboard benchmark page (index.html beside it, ?ms=N): a build of its own
 * (app/src/testing/dashboardBench.ts), never part of the console's. Same styles as the console.
 */
import '../../theme.css';
import { mountBench } from './DashboardBench.js';

const rootEl = document.getElementById('root');
if (rootEl) mountBench(rootEl);
