//! [`SegmentKind`], the heading/body distinction shared by [`crate::document`] and
//! [`crate::manuscript`]: a leaf module, so neither has to reach into the other for it.

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum SegmentKind {
    Heading,
    Body,
}
