//! Counts a skewed stream with the admission sketch and prints the estimated frequencies.
use cortado::sketch::FrequencySketch;

fn main() {
    let mut sketch = FrequencySketch::new(1_000);
    for round in 0..10u64 {
        for key in 0..100u64 {
            // Key k appears in a round only if k < 10 * (round + 1): low keys are the hot ones.
            if key < 10 * (round + 1) {
                sketch.increment(key);
            }
        }
    }
    for key in [0u64, 25, 50, 75, 99, 1_000] {
        println!(
            "key {key:>5}: estimated frequency {}",
            sketch.frequency(key)
        );
    }
}
