//! PELT change-point search with the least-squares (change-in-mean) cost:
//! the optimal segmentation of a benchmark's history, used by
//! `perflab.history.changepoints` (which adds the penalty, the size floor and
//! the Welch tests).
//!
//! Method: Killick, Fearnhead & Eckley (2012), "Optimal detection of
//! changepoints with a linear computational cost", JASA 107, with the pruning
//! constant K = 0 (valid for this cost, whose split never costs more than the
//! whole). Pruning makes it linear when changes keep coming; a history with no
//! change prunes nothing and costs n²/2 cost evaluations (5·10⁷ at n = 10,000,
//! about 0.1 s), which is why this loop is compiled rather than Python.

/// Optimal segmentation of `x` into constant-mean segments of at least
/// `min_size` points, minimising Σ segments Σ (xᵢ − segment mean)² + `penalty`
/// per segment.
///
/// Returns the segments' end positions (exclusive), the last one `x.len()`;
/// `[x.len()]` when there is no change or `x` is shorter than 2·`min_size`
/// (`min_size` 0 is taken as 1). Non-finite values give unspecified segments:
/// the caller passes finite ones.
pub fn pelt(x: &[f64], penalty: f64, min_size: usize) -> Vec<usize> {
    let n = x.len();
    let min_size = min_size.max(1);
    if n < 2 * min_size {
        return vec![n];
    }
    // centred running sums keep the costs free of cancellation
    let mean = x.iter().sum::<f64>() / n as f64;
    let mut s1 = Vec::with_capacity(n + 1);
    let mut s2 = Vec::with_capacity(n + 1);
    let (mut a, mut b) = (0.0f64, 0.0f64);
    s1.push(0.0);
    s2.push(0.0);
    for v in x {
        let d = v - mean;
        a += d;
        b += d * d;
        s1.push(a);
        s2.push(b);
    }
    let mut best = vec![f64::INFINITY; n + 1]; // optimal cost of x[..t], penalties included
    best[0] = -penalty;
    let mut last = vec![0usize; n + 1]; // start of the last segment of x[..t]
    let mut starts: Vec<usize> = vec![0]; // candidate starts of the last segment
    let mut costs: Vec<f64> = Vec::new();
    for t in min_size..=n {
        if t >= 2 * min_size {
            starts.push(t - min_size);
        }
        costs.clear();
        let (mut low, mut arg) = (f64::INFINITY, 0usize);
        for &s in &starts {
            let sum = s1[t] - s1[s];
            let c = best[s] + (s2[t] - s2[s]) - sum * sum / (t - s) as f64;
            costs.push(c);
            if c < low {
                low = c;
                arg = s;
            }
        }
        best[t] = low + penalty;
        last[t] = arg;
        let bound = best[t];
        let mut k = 0;
        starts.retain(|_| {
            k += 1;
            costs[k - 1] <= bound
        });
    }
    let mut ends = Vec::new();
    let mut t = n;
    while t > 0 {
        ends.push(t);
        t = last[t];
    }
    ends.reverse();
    ends
}

#[cfg(test)]
mod tests {
    use super::pelt;

    fn cost(x: &[f64]) -> f64 {
        let m = x.iter().sum::<f64>() / x.len() as f64;
        x.iter().map(|v| (v - m) * (v - m)).sum()
    }

    /// Exhaustive optimal partitioning (no pruning), for small n.
    fn optimal(x: &[f64], penalty: f64, min_size: usize) -> Vec<usize> {
        let n = x.len();
        let mut best = vec![f64::INFINITY; n + 1];
        let mut last = vec![0; n + 1];
        best[0] = -penalty;
        for t in min_size..=n {
            for s in (0..=t - min_size).filter(|&s| s == 0 || s >= min_size) {
                let c = best[s] + cost(&x[s..t]) + penalty;
                if c < best[t] {
                    best[t] = c;
                    last[t] = s;
                }
            }
        }
        let (mut ends, mut t) = (vec![], n);
        while t > 0 {
            ends.push(t);
            t = last[t];
        }
        ends.reverse();
        ends
    }

    #[test]
    fn finds_known_steps_and_nothing_on_a_flat_line() {
        let mut x: Vec<f64> = (0..60).map(|i| ((i * 7919) % 13) as f64 * 0.001).collect();
        assert_eq!(pelt(&x, 0.01, 3), vec![60]);
        for v in &mut x[20..40] {
            *v += 1.0;
        }
        assert_eq!(pelt(&x, 0.01, 3), vec![20, 40, 60]);
        assert_eq!(pelt(&x[..5], 0.01, 3), vec![5]);
    }

    #[test]
    fn pruning_keeps_the_optimum() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for trial in 0..200 {
            let n = 6 + trial % 40;
            let mut level = 0.0;
            let x: Vec<f64> = (0..n)
                .map(|_| {
                    if next() < 0.1 {
                        level += next() - 0.5;
                    }
                    level + 0.1 * (next() - 0.5)
                })
                .collect();
            for min_size in [1, 2, 3] {
                assert_eq!(
                    pelt(&x, 0.02, min_size),
                    optimal(&x, 0.02, min_size),
                    "{x:?}"
                );
            }
        }
    }
}
