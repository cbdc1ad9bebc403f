//! Delivery: what a retailer or a listener's player takes, mastered from the 24 kHz master.

pub mod mastering;
