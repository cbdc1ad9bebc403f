//! Tables read aloud, row by row, as a narrator reads them: the shared rule of every document
//! reader (DOCX, EPUB).
//!
//! With a header row, each body row becomes one paragraph that names every value by its
//! column: "Item: Lamp oil; Quantity: 12 barrels." Without one, a row's cells are read as a
//! list: "Lamp oil, 12 barrels." Empty cells are left out; ditto marks (`"`, `〃`, `do.`, …)
//! are read as the value they repeat; a header row alone says nothing, so it is not read.

use crate::DocBlock;

/// Cells that repeat the value above them in the same column (compared case-insensitively,
/// surrounding whitespace ignored).
const DITTO_MARKS: &[&str] = &["\"", "〃", "″", "”", "''", "do.", "ditto", "—\"—", "-\"-"];

/// What ends a sentence, so a row ending in one gets no full stop of its own.
const SENTENCE_ENDS: &[char] = &['.', '!', '?', '…', '。', '！', '？'];

/// What may follow a sentence's end and still leave it ended (closing quotes and brackets).
const CLOSERS: &[char] = &['"', '\'', '”', '’', '»', ')', ']', '」', '』', '）'];

/// The body blocks a table is read as: one per body row that has a value. `rows` are the
/// table's rows of cell texts, the first `header_rows` of them its header.
#[must_use]
pub fn table_blocks(rows: &[Vec<String>], header_rows: usize) -> Vec<DocBlock> {
    let header_rows = header_rows.min(rows.len());
    let labels = header_labels(&rows[..header_rows]);
    resolve_dittos(&rows[header_rows..])
        .iter()
        .filter_map(
            |row| if labels.is_empty() { list_row(row) } else { labelled_row(row, &labels) },
        )
        .map(DocBlock::body)
        .collect()
}

/// Each column's label: its header cells, whitespace collapsed, joined with a space (a table
/// may have several header rows). Empty when the table has no header.
fn header_labels(header: &[Vec<String>]) -> Vec<String> {
    let width = header.iter().map(Vec::len).max().unwrap_or(0);
    (0..width)
        .map(|col| {
            let parts: Vec<String> =
                header.iter().filter_map(|row| row.get(col)).map(|c| clean(c)).collect();
            parts.iter().filter(|p| !p.is_empty()).cloned().collect::<Vec<_>>().join(" ")
        })
        .collect()
}

/// The body rows with whitespace collapsed and every ditto mark replaced by the (resolved)
/// value above it; a ditto mark with nothing above is empty.
fn resolve_dittos(body: &[Vec<String>]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::with_capacity(body.len());
    for row in body {
        let resolved = row
            .iter()
            .enumerate()
            .map(|(col, cell)| {
                let cell = clean(cell);
                if is_ditto(&cell) {
                    out.last().and_then(|above| above.get(col)).cloned().unwrap_or_default()
                } else {
                    cell
                }
            })
            .collect();
        out.push(resolved);
    }
    out
}

/// Whether a cell only repeats the one above it.
fn is_ditto(cell: &str) -> bool {
    let lower = cell.to_lowercase();
    DITTO_MARKS.contains(&lower.as_str())
}

/// "Header1: value1; Header2: value2." (a cell without a label is read alone).
fn labelled_row(row: &[String], labels: &[String]) -> Option<String> {
    let parts: Vec<String> = row
        .iter()
        .enumerate()
        .filter(|(_, cell)| !cell.is_empty())
        .map(|(col, cell)| match labels.get(col).filter(|l| !l.is_empty()) {
            Some(label) => format!("{}: {cell}", label.trim_end_matches(':')),
            None => cell.clone(),
        })
        .collect();
    sentence(&parts, "; ")
}

/// "value1, value2."
fn list_row(row: &[String]) -> Option<String> {
    let parts: Vec<String> = row.iter().filter(|c| !c.is_empty()).cloned().collect();
    sentence(&parts, ", ")
}

/// The parts joined, ending with a full stop unless the last already ends a sentence.
fn sentence(parts: &[String], separator: &str) -> Option<String> {
    if parts.is_empty() {
        return None;
    }
    let mut text = parts.join(separator);
    if !ends_sentence(&text) {
        text.push('.');
    }
    Some(text)
}

fn ends_sentence(text: &str) -> bool {
    text.trim_end_matches(CLOSERS).ends_with(SENTENCE_ENDS)
}

/// A cell's text with its whitespace collapsed (cells of several paragraphs or lines are one
/// value).
fn clean(cell: &str) -> String {
    cell.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::table_blocks;

    fn rows(rows: &[&[&str]]) -> Vec<Vec<String>> {
        rows.iter().map(|r| r.iter().map(ToString::to_string).collect()).collect()
    }

    fn texts(rows_: &[&[&str]], header_rows: usize) -> Vec<String> {
        let blocks = table_blocks(&rows(rows_), header_rows);
        assert!(blocks.iter().all(|b| !b.verse && b.kind == crate::SegmentKind::Body));
        blocks.into_iter().map(|b| b.text).collect()
    }

    #[test]
    fn a_header_row_names_each_value() {
        let t = texts(
            &[&["Item", "Quantity"], &["Lamp oil", "12 barrels"], &["Wicks", "40 boxes!"]],
            1,
        );
        assert_eq!(
            t,
            ["Item: Lamp oil; Quantity: 12 barrels.", "Item: Wicks; Quantity: 40 boxes!"]
        );
    }

    #[test]
    fn without_a_header_cells_are_a_list() {
        let t = texts(&[&["Lamp oil", "12 barrels"], &["Wicks", "“40.”"]], 0);
        assert_eq!(t, ["Lamp oil, 12 barrels.", "Wicks, “40.”"]);
    }

    #[test]
    fn empty_cells_and_empty_rows_are_left_out() {
        let t =
            texts(&[&["Item", "", "Note"], &["Oil", "x", ""], &["", " ", ""], &["", "y", "z"]], 1);
        assert_eq!(t, ["Item: Oil; x.", "y; Note: z."]);
        assert_eq!(texts(&[&["a", "", "b"]], 0), ["a, b."]);
    }

    #[test]
    fn ditto_marks_repeat_the_resolved_value_above() {
        let t = texts(
            &[
                &["Item", "Supplier"],
                &["Oil", "Harbour Stores"],
                &["Wicks", "〃"],
                &["Matches", "DITTO"],
                &["Soap", "do."],
                &["Rope", "\u{201d}"],
                &["Tar", "''"],
                &["Salt", "—\"—"],
                &["Nails", " \" "],
            ],
            1,
        );
        assert!(t.iter().skip(1).all(|r| r.ends_with("Supplier: Harbour Stores.")), "{t:?}");
        assert_eq!(t.len(), 8);
    }

    #[test]
    fn a_ditto_mark_with_nothing_above_is_empty() {
        assert_eq!(texts(&[&["H1", "H2"], &["\"", "b"]], 1), ["H2: b."]);
        // The header is not the value above.
        assert_eq!(texts(&[&["A"], &["〃"]], 1), Vec::<String>::new());
    }

    #[test]
    fn a_header_row_alone_is_not_read() {
        assert!(texts(&[&["Item", "Quantity"]], 1).is_empty());
        assert!(texts(&[], 1).is_empty());
    }

    #[test]
    fn several_header_rows_label_together_and_whitespace_collapses() {
        let t = texts(&[&["Lamp", "Lamp"], &["oil", "wick"], &["2\n litres", "  1 "]], 2);
        assert_eq!(t, ["Lamp oil: 2 litres; Lamp wick: 1."]);
    }
}
