//! Expression syntax tree.

use std::sync::Arc;

use crate::ad::Ad;

/// A literal constant.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// `undefined`
    Undefined,
    /// `error`
    Error,
    /// `true` / `false`
    Bool(bool),
    /// A 64-bit signed integer.
    Int(i64),
    /// A double-precision real.
    Real(f64),
    /// A string.
    Str(String),
}

/// Explicit attribute scope (`MY.x`, `TARGET.x`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `MY.` — the ad that owns the expression.
    My,
    /// `TARGET.` — the other ad of a match.
    Target,
}

/// Unary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    /// `-x`
    Neg,
    /// `+x`
    Plus,
    /// `!x`
    Not,
    /// `~x`
    BitNot,
}

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Mod,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `<<`
    Shl,
    /// `>>` (arithmetic)
    Shr,
    /// `>>>` (logical)
    UShr,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `=?=` / `is`
    Is,
    /// `=!=` / `isnt`
    Isnt,
    /// `&`
    BitAnd,
    /// `^`
    BitXor,
    /// `|`
    BitOr,
    /// `&&`
    And,
    /// `||`
    Or,
    /// `?:` (HTCondor's "elvis" operator): the left value unless it is
    /// `undefined`, then the right one; as loose and right-associative as
    /// the conditional.
    Elvis,
}

impl BinOp {
    /// The operator as HTCondor prints it.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::UShr => ">>>",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Is => "is",
            BinOp::Isnt => "isnt",
            BinOp::BitAnd => "&",
            BinOp::BitXor => "^",
            BinOp::BitOr => "|",
            BinOp::And => "&&",
            BinOp::Or => "||",
            BinOp::Elvis => "?:",
        }
    }

    /// Binding power (higher binds tighter); all binary operators are left-associative.
    pub(crate) fn precedence(self) -> u8 {
        match self {
            BinOp::Elvis => 1,
            BinOp::Or => 2,
            BinOp::And => 3,
            BinOp::BitOr => 4,
            BinOp::BitXor => 5,
            BinOp::BitAnd => 6,
            BinOp::Eq | BinOp::Ne | BinOp::Is | BinOp::Isnt => 7,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 8,
            BinOp::Shl | BinOp::Shr | BinOp::UShr => 9,
            BinOp::Add | BinOp::Sub => 10,
            BinOp::Mul | BinOp::Div | BinOp::Mod => 11,
        }
    }
}

/// A ClassAd expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A constant.
    Lit(Literal),
    /// An attribute reference, optionally scoped. `name` keeps its spelling; lookups ignore case.
    Attr {
        /// `Some` for `MY.name` / `TARGET.name`.
        scope: Option<Scope>,
        /// How the scope word was spelled (`my`, `Target`, ...), for faithful printing;
        /// `None` prints the canonical `MY` / `TARGET`.
        scope_word: Option<String>,
        /// The attribute name as written.
        name: String,
    },
    /// `{ e1, e2, ... }`
    List(Arc<Vec<Expr>>),
    /// `[ a = e1; b = e2 ]`
    Ad(Ad),
    /// `base.name`
    Select(Box<Expr>, String),
    /// `base[index]`
    Index(Box<Expr>, Box<Expr>),
    /// A prefix operator.
    Unary(UnOp, Box<Expr>),
    /// An infix operator.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `c ? a : b`
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `name(args...)`; the name keeps its spelling, lookups ignore case.
    Call(String, Vec<Expr>),
    /// `( e )`, kept so that unparsing reproduces the source grouping (as HTCondor does).
    Paren(Box<Expr>),
}

impl Expr {
    /// Strips any number of enclosing parentheses.
    pub fn strip_parens(&self) -> &Expr {
        let mut e = self;
        while let Expr::Paren(inner) = e {
            e = inner;
        }
        e
    }
}
