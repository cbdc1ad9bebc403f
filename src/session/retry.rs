//! A take with no speech is tried again by itself: the engine fails a segment whose take came
//! out empty (`0 speech tokens`, [`NO_SPEECH`]), and the same seed would fail the same way on
//! every run. So the segment is rendered again with the next seeds of a fixed sequence derived
//! from the seed that failed ([`retry_seeds`]), up to [`NO_SPEECH_TRIES`] tries in all, each as
//! a flow group of its own. The sequence depends on nothing but that seed, so a retried take is
//! reproducible from its record (its seed is in it) and the list can tell which try made it
//! ([`retry_try`]).

use std::collections::HashMap;
use std::path::Path;

use super::seed;
use lectern_engine::protocol::{SegmentId, SegmentSpec};
pub use lectern_engine::thread::NO_SPEECH;

/// How many times a segment is tried in all when its take has no speech: its own seed, then
/// the next seeds of its retry sequence. On the demo model a few segments in a hundred give
/// no speech for a seed; two more seeds make a book's failure rare without hiding a text the
/// model never speaks (that one still fails, naming `lectern reseed`).
pub const NO_SPEECH_TRIES: u32 = 3;

/// Whether an engine failure is a take with no speech (the one failure a new seed can fix).
#[must_use]
pub fn is_no_speech(why: &str) -> bool {
    why == NO_SPEECH
}

/// The seeds a segment whose first seed was `first` is tried with, in order: `first`, then
/// each retry's seed ([`seed::reseed`] of `first`, never one already in the sequence).
#[must_use]
pub fn retry_seeds(first: u64) -> Vec<u64> {
    let mut seeds = vec![first];
    while seeds.len() < NO_SPEECH_TRIES as usize {
        let n = seeds.len() as u32;
        seeds.push(seed::reseed(first, n, &seeds));
    }
    seeds
}

/// Which try of `first`'s sequence made a take of seed `seed`: `Some(2)` for the first retry,
/// `Some(3)` for the second, …; `None` for the first try or a seed outside the sequence.
#[must_use]
pub fn retry_try(first: u64, seed: u64) -> Option<u32> {
    retry_seeds(first).iter().skip(1).position(|&s| s == seed).map(|i| i as u32 + 2)
}

/// What fixes segment `n` of `book` that failed with `why` once its tries are spent: for no
/// speech, the command that tries other seeds (or a rewording); for another failure, its
/// reason and a render again (`render` keeps the other takes and retries only the failed).
#[must_use]
pub fn failure_fix(book: &Path, n: usize, why: &str) -> String {
    let book = book.display();
    if is_no_speech(why) {
        format!(
            "{NO_SPEECH_TRIES} seeds in a row gave no speech: try others with `lectern reseed \
             {book} {n} --seed 2` (any other base seed), or reword its text in {book}"
        )
    } else {
        format!("{why}: `lectern render {book}` tries it again")
    }
}

/// A retry asked of the engine: the segment, the seed that gave no speech and the spec that
/// tries again.
#[derive(Debug, Clone, PartialEq)]
pub struct Retry {
    pub segment: SegmentId,
    pub failed_seed: u64,
    /// Which try the spec is (2 for the first retry), of [`NO_SPEECH_TRIES`].
    pub try_number: u32,
    pub spec: SegmentSpec,
}

/// The retries of one batch of specs: remembers each spec sent, and answers a no-speech
/// failure with the spec of its next try while tries are left.
#[derive(Debug, Clone, Default)]
pub struct NoSpeechRetries {
    /// Each segment's spec as first sent, and how many tries it has had.
    sent: HashMap<SegmentId, (SegmentSpec, u32)>,
}

impl NoSpeechRetries {
    /// Retries for these specs (a later spec of the same segment replaces an earlier one).
    #[must_use]
    pub fn new(specs: &[SegmentSpec]) -> Self {
        let mut retries = Self::default();
        retries.add(specs);
        retries
    }

    /// Remembers more specs sent to the engine.
    pub fn add(&mut self, specs: &[SegmentSpec]) {
        for spec in specs {
            self.sent.insert(spec.id, (spec.clone(), 1));
        }
    }

    /// The next try of a segment that failed with `why`: `None` when the failure is not a take
    /// with no speech, the segment was not sent through here, or its tries are spent.
    pub fn next(&mut self, segment: SegmentId, why: &str) -> Option<Retry> {
        if !is_no_speech(why) {
            return None;
        }
        let (first, tries) = self.sent.get_mut(&segment)?;
        if *tries >= NO_SPEECH_TRIES {
            return None;
        }
        let seeds = retry_seeds(first.seed);
        let failed_seed = seeds[*tries as usize - 1];
        *tries += 1;
        let mut spec = first.clone().with_group_break();
        spec.seed = seeds[*tries as usize - 1];
        Some(Retry { segment, failed_seed, try_number: *tries, spec })
    }

    /// How many tries a segment has had (0: not sent through here).
    #[must_use]
    pub fn tries(&self, segment: SegmentId) -> u32 {
        self.sent.get(&segment).map_or(0, |(_, n)| *n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(id: SegmentId, seed: u64) -> SegmentSpec {
        SegmentSpec {
            id,
            text: format!("segment {id}"),
            seed,
            group_break_after: false,
            content: Default::default(),
            casting: Default::default(),
        }
    }

    #[test]
    fn the_retry_sequence_is_a_function_of_the_first_seed() {
        let seeds = retry_seeds(4242);
        assert_eq!(seeds.len(), NO_SPEECH_TRIES as usize);
        assert_eq!(seeds, retry_seeds(4242));
        assert_ne!(seeds, retry_seeds(4243));
        let mut distinct = seeds.clone();
        distinct.dedup();
        assert_eq!(distinct.len(), seeds.len());
        assert_eq!(retry_try(4242, seeds[0]), None);
        assert_eq!(retry_try(4242, seeds[1]), Some(2));
        assert_eq!(retry_try(4242, seeds[2]), Some(3));
    }

    #[test]
    fn only_no_speech_is_retried_and_only_while_tries_are_left() {
        let mut r = NoSpeechRetries::new(&[spec(7, 100), spec(8, 200)]);
        assert_eq!(r.next(7, "device lost"), None);
        assert_eq!(r.next(9, NO_SPEECH), None, "never sent");
        let seeds = retry_seeds(100);
        for try_number in 2..=NO_SPEECH_TRIES {
            let retry = r.next(7, NO_SPEECH).expect("a try is left");
            assert_eq!(retry.try_number, try_number);
            assert_eq!(retry.failed_seed, seeds[try_number as usize - 2]);
            assert_eq!(retry.spec.seed, seeds[try_number as usize - 1]);
            assert!(retry.spec.group_break_after, "a retry is a group of its own");
            assert_eq!(retry.spec.text, "segment 7");
        }
        assert_eq!(r.next(7, NO_SPEECH), None, "tries spent");
        assert_eq!(r.tries(7), NO_SPEECH_TRIES);
        assert_eq!(r.tries(8), 1);
    }

    #[test]
    fn a_spent_no_speech_failure_names_reseed_and_another_names_render() {
        let fix = failure_fix(Path::new("tale.md"), 6, NO_SPEECH);
        assert!(fix.contains("`lectern reseed tale.md 6 --seed 2`"), "{fix}");
        let fix = failure_fix(Path::new("tale.md"), 6, "device lost");
        assert_eq!(fix, "device lost: `lectern render tale.md` tries it again");
    }
}
