//! Fixed-width columns as HTCondor's tools lay them out
//! (`AttrListPrintMask`'s display): each column has a width (0: as wide
//! as its text), an alignment, whether a longer text is cut, and the
//! character shown when it has no value (`OR _`, `OR ??`); a row is the
//! row prefix, then each shown column with the column prefix before it
//! (not the first) and the column suffix after it (not the last), then
//! the row suffix. Headings are laid out the same way, left aligned.
//!
//! Cells arrive already escaped for the terminal (`super::escape`).

/// What a column shows when its value is missing or of the wrong type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Alt {
    /// `' '` shows nothing.
    pub ch: char,
    /// Fill the column's width (`??` → `[????]`, `__` → `____`).
    pub wide: bool,
}

impl Default for Alt {
    fn default() -> Self {
        Alt::NONE
    }
}

impl Alt {
    pub const NONE: Alt = Alt {
        ch: ' ',
        wide: false,
    };
    pub const fn of(ch: char) -> Alt {
        Alt { ch, wide: false }
    }
    pub const fn wide(ch: char) -> Alt {
        Alt { ch, wide: true }
    }

    fn text(self, width: usize) -> String {
        if self.wide {
            if width == 0 {
                return String::new();
            }
            if width < 3 {
                return self.ch.to_string();
            }
            if self.ch == '?' {
                return format!("[{}]", "?".repeat(width - 2));
            }
            return self.ch.to_string().repeat(width);
        }
        if self.ch == ' ' {
            String::new()
        } else {
            self.ch.to_string()
        }
    }
}

/// One column.
#[derive(Clone, Debug, Default)]
pub struct Col {
    pub heading: String,
    /// 0: no fixed width.
    pub width: usize,
    pub left: bool,
    /// Grow to the widest value.
    pub auto: bool,
    /// Cut values longer than the width.
    pub truncate: bool,
    pub no_prefix: bool,
    pub no_suffix: bool,
    pub hide: bool,
    pub alt: Alt,
}

impl Col {
    /// A column `width` wide (negative: left aligned), values never cut.
    pub fn new(heading: &str, width: i32) -> Col {
        Col {
            heading: heading.to_string(),
            width: width.unsigned_abs() as usize,
            left: width < 0,
            alt: Alt::NONE,
            ..Default::default()
        }
    }
    pub fn auto(mut self) -> Col {
        self.auto = true;
        self
    }
    pub fn truncate(mut self) -> Col {
        self.truncate = true;
        self
    }
    pub fn no_prefix(mut self) -> Col {
        self.no_prefix = true;
        self
    }
    pub fn no_suffix(mut self) -> Col {
        self.no_suffix = true;
        self
    }
    pub fn or(mut self, alt: Alt) -> Col {
        self.alt = alt;
        self
    }
}

/// A row's cells: `None` where the column has no value.
pub type Cells = Vec<Option<String>>;

/// Columns with the separators between them.
#[derive(Clone, Debug)]
pub struct Layout {
    pub cols: Vec<Col>,
    pub row_prefix: String,
    pub col_prefix: String,
    pub col_suffix: String,
    pub row_suffix: String,
}

fn width_of(s: &str) -> usize {
    s.chars().count()
}

impl Layout {
    /// HTCondor's default for print formats: a space before every column
    /// but the first, a newline after each row.
    pub fn new(cols: Vec<Col>) -> Layout {
        Layout {
            cols,
            row_prefix: String::new(),
            col_prefix: " ".into(),
            col_suffix: String::new(),
            row_suffix: "\n".into(),
        }
    }

    /// Widens the automatic columns to their widest value.
    pub fn fit(&mut self, rows: &[Cells]) {
        for (i, col) in self.cols.iter_mut().enumerate() {
            if !col.auto {
                continue;
            }
            for r in rows {
                if let Some(Some(v)) = r.get(i) {
                    col.width = col.width.max(width_of(v));
                }
            }
        }
    }

    /// The heading line.
    pub fn header(&self) -> String {
        let mut out = self.row_prefix.clone();
        let n = self.cols.len();
        for (i, col) in self.cols.iter().enumerate() {
            if col.hide {
                continue;
            }
            if i != 0 && !col.no_prefix {
                out.push_str(&self.col_prefix);
            }
            out.push_str(&col.heading);
            let w = width_of(&col.heading);
            if col.width > w {
                out.push_str(&" ".repeat(col.width - w));
            }
            if i + 1 < n && !col.no_suffix {
                out.push_str(&self.col_suffix);
            }
        }
        out.push_str(&self.row_suffix);
        out
    }

    /// One row.
    pub fn row(&self, cells: &[Option<String>]) -> String {
        let mut out = self.row_prefix.clone();
        let n = self.cols.len();
        for (i, col) in self.cols.iter().enumerate() {
            if col.hide {
                continue;
            }
            if i > 0 && !col.no_prefix {
                out.push_str(&self.col_prefix);
            }
            let alt;
            let text: &str = match cells.get(i) {
                Some(Some(v)) => v,
                _ => {
                    alt = col.alt.text(col.width);
                    &alt
                }
            };
            let w = width_of(text);
            if col.width == 0 {
                out.push_str(text);
            } else if w > col.width {
                if col.truncate {
                    out.extend(text.chars().take(col.width));
                } else {
                    out.push_str(text);
                }
            } else if col.left {
                out.push_str(text);
                out.push_str(&" ".repeat(col.width - w));
            } else {
                out.push_str(&" ".repeat(col.width - w));
                out.push_str(text);
            }
            if i + 1 < n && !col.no_suffix {
                out.push_str(&self.col_suffix);
            }
        }
        out.push_str(&self.row_suffix);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_and_fall_back() {
        let l = Layout::new(vec![
            Col::new("OWNER", -6),
            Col::new("  DONE", 6).or(Alt::of('_')),
            Col::new("  SUBMITTED", 11).or(Alt::wide('?')),
            Col::new("IDS", 0),
        ]);
        assert_eq!(l.header(), "OWNER    DONE   SUBMITTED IDS\n");
        let row = l.row(&[Some("bob".into()), None, None, Some("1.0".into())]);
        assert_eq!(row, "bob         _ [?????????] 1.0\n");
    }

    #[test]
    fn automatic_widths_grow_with_the_data() {
        let mut l = Layout::new(vec![Col::new("A", -1).auto(), Col::new("B", 3).truncate()]);
        let rows = vec![vec![Some("long".into()), Some("abcdef".into())]];
        l.fit(&rows);
        assert_eq!(l.header(), "A    B  \n");
        assert_eq!(l.row(&rows[0]), "long abc\n");
    }

    #[test]
    fn no_prefix_joins_columns() {
        let l = Layout::new(vec![
            Col::new(" ID", 5).no_suffix(),
            Col::new(" ", 3).no_prefix(),
            Col::new("OWNER", -14),
        ]);
        assert_eq!(l.header(), " ID      OWNER         \n");
    }
}
