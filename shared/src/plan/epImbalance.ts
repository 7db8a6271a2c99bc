/**
 * Load imbalance of an EP group: the slowest rank bounds every MoE layer, so a derived
 * per-rank FFN time is taken at the rows of the busiest rank, not the mean.
 *
 * T tokens, each routed uniformly to k distinct of E experts, E/n experts on each of n
 * ranks. The routed rows (token-expert pairs) on one rank are a sum over tokens of
 * hypergeometric counts (k draws of E, E/n on the rank): mean Tk/n, variance
 * Tk (1/n)(1 - 1/n)(E - k)/(E - 1). The n counts sum to Tk, so they are equicorrelated
 * (rho = -1/(n-1)); as normals, X_i = mean + sigma sqrt(n/(n-1)) (Z_i - mean(Z)), and the
 * expected maximum is
 *
 *   mean + sigma x sqrt(n / (n - 1)) x e_n,   e_n = E[max of n iid standard normals]
 *
 * (e_2 = 0.56, e_8 = 1.42, e_72 = 2.40, by quadrature; sqrt(2 ln n) would overstate it by
 * 2x at n = 2), capped at what one rank can take (T x min(k, E/n)). Against a Monte Carlo
 * of the routing it is within 3% from about 8 mean rows per rank up, and low by up to 10%
 * near 1 row per rank, where the count is too discrete for a normal (expertParallel.test.ts).
 * Real routers are not uniform (hot experts): this is the floor of the imbalance, not a fit.
 */

const eMaxCache = new Map<number, number>();

/** E[max of n iid standard normals]: the integral of x n phi(x) Phi(x)^(n-1), Phi summed on the same grid. */
export function expectedMaxNormal(n: number): number {
  if (n <= 1) return 0;
  let e = eMaxCache.get(n);
  if (e === undefined) {
    const h = 0.005;
    let cdf = 0;
    e = 0;
    for (let x = -10; x <= 10; x += h) {
      const pdf = Math.exp((-x * x) / 2) / Math.sqrt(2 * Math.PI);
      cdf += pdf * h;
      e += x * n * pdf * cdf ** (n - 1) * h;
    }
    eMaxCache.set(n, e);
  }
  return e;
}

/** Expected routed rows (token-expert pairs) on the busiest of `epSize` ranks for `tokens` tokens, each to `topK` of `experts`. */
export function busiestRankRows(tokens: number, topK: number, experts: number, epSize: number): number {
  const mean = (tokens * topK) / epSize;
  if (epSize <= 1 || tokens <= 0 || experts <= 1) return mean;
  const variance = tokens * topK * (1 / epSize) * (1 - 1 / epSize) * ((experts - topK) / (experts - 1));
  const max = mean + Math.sqrt(variance) * Math.sqrt(epSize / (epSize - 1)) * expectedMaxNormal(epSize);
  return Math.min(tokens * Math.min(topK, experts / epSize), max);
}

/**
 * The busiest rank's rows over the mean (>= 1; 1 for a group of one). A per-rank FFN curve
 * evaluated at `tokens` x this factor sees the busiest rank's routed rows and, through the
 * curve's expected distinct experts, about the experts that rank touches: its Tk f / n pairs
 * fall on its E/n experts, (E/n)(1 - (1 - n/E)^(Tkf/n)) ~ E(1 - (1 - k/E)^(Tf)) / n.
 */
export function imbalanceFactor(tokens: number, topK: number, experts: number, epSize: number): number {
  if (epSize <= 1 || tokens <= 0) return 1;
  return busiestRankRows(tokens, topK, experts, epSize) / ((tokens * topK) / epSize);
}
