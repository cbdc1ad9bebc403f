//! The manuscript's source text: bytes checked and decoded, split into lines, and byte
//! offsets turned into line and column.

use std::path::Path;

use super::Position;
use crate::{Result, TextError};

/// Checks bytes for a binary file and UTF-8; errors name the line.
pub fn decode<'b>(bytes: &'b [u8], path: &Path) -> Result<&'b str> {
    if let Some(offset) = bytes.iter().take(8192).position(|&b| b == 0) {
        return Err(TextError::Binary { path: path.to_path_buf(), offset });
    }
    let src = std::str::from_utf8(bytes).map_err(|e| {
        let offset = e.valid_up_to();
        let good = &bytes[..offset];
        let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        // The prefix is valid UTF-8, so the column counts chars.
        let column = std::str::from_utf8(&good[line_start..]).map_or(0, |s| s.chars().count()) + 1;
        TextError::InvalidUtf8 { path: path.to_path_buf(), line, column, offset }
    })?;
    if let Some(offset) = src.find('\0') {
        return Err(TextError::Binary { path: path.to_path_buf(), offset });
    }
    Ok(src)
}

/// Line/column lookup, fast for increasing offsets.
pub(super) struct Cursor<'s> {
    src: &'s str,
    offset: usize,
    pos: Position,
}

impl<'s> Cursor<'s> {
    pub(super) fn new(src: &'s str) -> Self {
        Self { src, offset: 0, pos: Position { line: 1, column: 1 } }
    }

    pub(super) fn position(&mut self, offset: usize) -> Position {
        let mut offset = offset.min(self.src.len());
        while !self.src.is_char_boundary(offset) {
            offset -= 1;
        }
        if offset < self.offset {
            // Spans may overlap where a segment boundary falls inside one rewritten source
            // range (a number read as several words); step back without rescanning the file.
            let back = &self.src[offset..self.offset];
            if back.contains('\n') {
                self.pos.line -= back.matches('\n').count();
                let line_start = self.src[..offset].rfind('\n').map_or(0, |i| i + 1);
                self.pos.column = self.src[line_start..offset].chars().count() + 1;
            } else {
                self.pos.column -= back.chars().count();
            }
            self.offset = offset;
            return self.pos;
        }
        for c in self.src[self.offset..offset].chars() {
            if c == '\n' {
                self.pos.line += 1;
                self.pos.column = 1;
            } else {
                self.pos.column += 1;
            }
        }
        self.offset = offset;
        self.pos
    }
}

/// Source lines as (content without the line break, byte offset, byte offset after the break).
pub(super) fn lines(src: &str) -> Vec<(&str, usize, usize)> {
    let mut out = Vec::new();
    let mut off = if src.starts_with('\u{feff}') { 3 } else { 0 };
    while off < src.len() {
        let end = src[off..].find('\n').map_or(src.len(), |k| off + k);
        let next = (end + 1).min(src.len());
        let content = src[off..end].strip_suffix('\r').unwrap_or(&src[off..end]);
        out.push((content, off, next.max(end)));
        off = end + 1;
    }
    out
}
