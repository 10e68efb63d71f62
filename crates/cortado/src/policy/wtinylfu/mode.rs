//! W-TinyLFU's modes: how the policy splits its capacity between the window and the main space,
//! and how it admits candidates.
//!
//! [`STATIC_MODE`] is the static policy's; [`MODES`] is the table the adaptive policy's
//! [`Experts`](super::experts::Experts) choose from, and [`mode_of`] combines an entry of it with
//! an admission margin.

/// How the policy splits its capacity and admits candidates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Mode {
    /// The window's share of the capacity, in [0, 1].
    pub(crate) window: f64,
    /// Candidates at least this frequent are admitted without a duel (0: never).
    pub(crate) lenient: u8,
    /// Whether returning candidates (in the ghost) are admitted without a duel.
    pub(crate) ghost: bool,
    /// How many more times than the victim a candidate must have been seen to win a duel,
    /// less one (0: any more often wins).
    pub(crate) margin: u8,
}

/// The static policy's mode: Caffeine's 1% window and strict admission.
pub(crate) const STATIC_MODE: Mode = Mode {
    window: 0.01,
    lenient: 0,
    ghost: true,
    margin: 0,
};

/// The modes the experts choose from, from frequency-biased to recency-biased: the cache moves
/// one step at a time, so the order matters (see `docs/decisions/0112-mode-table.md`).
pub(crate) const MODES: [Mode; 7] = [
    Mode {
        window: 0.01,
        lenient: 0,
        ghost: false,
        margin: 0,
    },
    Mode {
        window: 0.03,
        lenient: 0,
        ghost: true,
        margin: 0,
    },
    Mode {
        window: 0.10,
        lenient: 0,
        ghost: true,
        margin: 0,
    },
    Mode {
        window: 0.20,
        lenient: 3,
        ghost: true,
        margin: 0,
    },
    Mode {
        window: 0.35,
        lenient: 2,
        ghost: true,
        margin: 0,
    },
    // A segmented LRU: every candidate is admitted (its count is at least 1), and only what is
    // read again in probation reaches the protected segment.
    Mode {
        window: 0.01,
        lenient: 1,
        ghost: true,
        margin: 0,
    },
    Mode {
        window: 1.00,
        lenient: 0,
        ghost: true,
        margin: 0,
    },
];
/// The mode a cache starts in (a 3% window).
pub const START_MODE: usize = 1;
/// The admission margin a cache starts with (see [`Mode::margin`]).
pub const START_MARGIN: u8 = 1;

/// The mode at `index` in [`MODES`] with admission margin `margin`.
pub(crate) fn mode_of(index: usize, margin: u8) -> Mode {
    Mode {
        margin,
        ..MODES[index]
    }
}
