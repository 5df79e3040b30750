//! Hand-written Pratt parser.
//!
//! Precedence, loosest first (as in HTCondor's grammar): `?:` (right-assoc), `||`, `&&`, `|`, `^`,
//! `&`, `== != =?= =!= is isnt`, `< <= > >=`, `<< >> >>>`, `+ -`, `* / %`, unary `- + ! ~`,
//! then postfix selection `.`, subscript `[]` and calls.

use std::sync::Arc;

use crate::ad::Ad;
use crate::ast::{BinOp, Expr, Literal, Scope, UnOp};
use crate::error::ParseError;
use crate::lexer::{Tok, Token, tokenize};

/// Maximum syntactic nesting depth; deeper input is rejected instead of overflowing the stack.
pub const MAX_DEPTH: usize = 128;

pub(crate) struct Parser<'s> {
    src: &'s str,
    toks: Vec<Token>,
    pos: usize,
    depth: usize,
}

/// Parses one complete expression.
pub fn parse_expr(src: &str) -> Result<Expr, ParseError> {
    let mut p = Parser::new(src)?;
    let e = p.expr()?;
    p.expect_eof()?;
    Ok(e)
}

impl<'s> Parser<'s> {
    pub(crate) fn new(src: &'s str) -> Result<Self, ParseError> {
        Ok(Parser {
            src,
            toks: tokenize(src)?,
            pos: 0,
            depth: 0,
        })
    }

    fn peek(&self) -> &Tok {
        self.toks.get(self.pos).map(|t| &t.tok).unwrap_or(&Tok::Eof)
    }

    fn offset(&self) -> usize {
        self.toks
            .get(self.pos)
            .map(|t| t.offset)
            .unwrap_or(self.src.len())
    }

    fn bump(&mut self) -> Tok {
        let t = self.peek().clone();
        if self.pos < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn err(&self, msg: impl Into<String>) -> ParseError {
        ParseError::at(self.src, self.offset(), msg)
    }

    fn describe(t: &Tok) -> String {
        match t {
            Tok::Int(i) => format!("integer {i}"),
            Tok::Real(r) => format!("real {r}"),
            Tok::Str(_) => "string".into(),
            Tok::Ident { name, .. } => format!("'{name}'"),
            Tok::LParen => "'('".into(),
            Tok::RParen => "')'".into(),
            Tok::LBrace => "'{'".into(),
            Tok::RBrace => "'}'".into(),
            Tok::LBracket => "'['".into(),
            Tok::RBracket => "']'".into(),
            Tok::Comma => "','".into(),
            Tok::Semi => "';'".into(),
            Tok::Dot => "'.'".into(),
            Tok::Question => "'?'".into(),
            Tok::Colon => "':'".into(),
            Tok::Assign => "'='".into(),
            Tok::Op(o) => format!("'{o}'"),
            Tok::Eof => "end of input".into(),
        }
    }

    fn expect(&mut self, want: &Tok, what: &str) -> Result<(), ParseError> {
        if self.peek() == want {
            self.bump();
            Ok(())
        } else {
            Err(self.err(format!(
                "expected {what}, found {}",
                Self::describe(self.peek())
            )))
        }
    }

    pub(crate) fn expect_eof(&self) -> Result<(), ParseError> {
        if *self.peek() == Tok::Eof {
            Ok(())
        } else {
            Err(self.err(format!(
                "unexpected {} after end of expression",
                Self::describe(self.peek())
            )))
        }
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            Err(self.err(format!("expression nested deeper than {MAX_DEPTH} levels")))
        } else {
            Ok(())
        }
    }

    /// Left-nested chains (`a+b+c+...`, `a.b.c...`) grow the tree without recursing here;
    /// bound them as well so that evaluation and dropping stay shallow.
    fn check_chain(&self, chain: usize) -> Result<(), ParseError> {
        if self.depth + chain > MAX_DEPTH {
            Err(self.err(format!("expression nested deeper than {MAX_DEPTH} levels")))
        } else {
            Ok(())
        }
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Full expression including the conditional operator.
    pub(crate) fn expr(&mut self) -> Result<Expr, ParseError> {
        self.enter()?;
        let r = self.cond();
        self.leave();
        r
    }

    fn cond(&mut self) -> Result<Expr, ParseError> {
        let c = self.binary(0)?;
        if *self.peek() == Tok::Question {
            self.bump();
            // `a ?: b`: `a` unless it is undefined.
            if *self.peek() == Tok::Colon {
                self.bump();
                let b = self.expr()?;
                return Ok(Expr::Binary(BinOp::Elvis, Box::new(c), Box::new(b)));
            }
            let a = self.expr()?;
            self.expect(&Tok::Colon, "':'")?;
            let b = self.expr()?;
            return Ok(Expr::Cond(Box::new(c), Box::new(a), Box::new(b)));
        }
        Ok(c)
    }

    fn binop(&self) -> Option<BinOp> {
        Some(match self.peek() {
            Tok::Op(o) => match *o {
                "*" => BinOp::Mul,
                "/" => BinOp::Div,
                "%" => BinOp::Mod,
                "+" => BinOp::Add,
                "-" => BinOp::Sub,
                "<<" => BinOp::Shl,
                ">>" => BinOp::Shr,
                ">>>" => BinOp::UShr,
                "<" => BinOp::Lt,
                "<=" => BinOp::Le,
                ">" => BinOp::Gt,
                ">=" => BinOp::Ge,
                "==" => BinOp::Eq,
                "!=" => BinOp::Ne,
                "=?=" => BinOp::Is,
                "=!=" => BinOp::Isnt,
                "&" => BinOp::BitAnd,
                "^" => BinOp::BitXor,
                "|" => BinOp::BitOr,
                "&&" => BinOp::And,
                "||" => BinOp::Or,
                _ => return None,
            },
            Tok::Ident {
                name,
                quoted: false,
            } => {
                if name.eq_ignore_ascii_case("is") {
                    BinOp::Is
                } else if name.eq_ignore_ascii_case("isnt") {
                    BinOp::Isnt
                } else {
                    return None;
                }
            }
            _ => return None,
        })
    }

    /// Precedence climbing over left-associative binary operators.
    fn binary(&mut self, min_prec: u8) -> Result<Expr, ParseError> {
        let mut lhs = self.unary()?;
        let mut chain = 0usize;
        while let Some(op) = self.binop() {
            let prec = op.precedence();
            if prec <= min_prec {
                break;
            }
            chain += 1;
            self.check_chain(chain)?;
            self.bump();
            self.enter()?;
            let rhs = self.binary(prec);
            self.leave();
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs?));
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        let op = match self.peek() {
            Tok::Op("-") => Some(UnOp::Neg),
            Tok::Op("+") => Some(UnOp::Plus),
            Tok::Op("!") => Some(UnOp::Not),
            Tok::Op("~") => Some(UnOp::BitNot),
            _ => None,
        };
        if let Some(op) = op {
            let minus_at = self.offset();
            self.bump();
            // HTCondor folds a minus sign written directly before a number into a negative
            // literal (`-1`), while `- 1` stays a unary operator; this only shows when printing.
            if op == UnOp::Neg && self.offset() == minus_at + 1 {
                let folded = match *self.peek() {
                    Tok::Int(i) => Some(Expr::Lit(Literal::Int(clamp_i64(-i)))),
                    Tok::Real(r) => Some(Expr::Lit(Literal::Real(-r))),
                    _ => None,
                };
                if let Some(lit) = folded {
                    self.bump();
                    return self.postfix_of(lit);
                }
            }
            self.enter()?;
            let inner = self.unary();
            self.leave();
            return Ok(Expr::Unary(op, Box::new(inner?)));
        }
        self.postfix()
    }

    fn postfix(&mut self) -> Result<Expr, ParseError> {
        let e = self.primary()?;
        self.postfix_of(e)
    }

    fn postfix_of(&mut self, mut e: Expr) -> Result<Expr, ParseError> {
        let mut chain = 0usize;
        loop {
            if matches!(self.peek(), Tok::Dot | Tok::LBracket) {
                chain += 1;
                self.check_chain(chain)?;
            }
            match self.peek() {
                Tok::Dot => {
                    self.bump();
                    let name = match self.bump() {
                        Tok::Ident { name, .. } => name,
                        other => {
                            self.pos = self.pos.saturating_sub(1);
                            return Err(self.err(format!(
                                "expected attribute name after '.', found {}",
                                Self::describe(&other)
                            )));
                        }
                    };
                    // `MY.x` / `TARGET.x` are scoped references, not selections.
                    e = match e {
                        Expr::Attr {
                            scope: None,
                            name: ref base,
                            ..
                        } if base.eq_ignore_ascii_case("my") => Expr::Attr {
                            scope: Some(Scope::My),
                            scope_word: Some(base.clone()),
                            name,
                        },
                        Expr::Attr {
                            scope: None,
                            name: ref base,
                            ..
                        } if base.eq_ignore_ascii_case("target") => Expr::Attr {
                            scope: Some(Scope::Target),
                            scope_word: Some(base.clone()),
                            name,
                        },
                        other => Expr::Select(Box::new(other), name),
                    };
                }
                Tok::LBracket => {
                    self.bump();
                    let idx = self.expr()?;
                    self.expect(&Tok::RBracket, "']'")?;
                    e = Expr::Index(Box::new(e), Box::new(idx));
                }
                _ => return Ok(e),
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, ParseError> {
        match self.bump() {
            Tok::Int(i) => Ok(Expr::Lit(Literal::Int(clamp_i64(i)))),
            Tok::Real(r) => Ok(Expr::Lit(Literal::Real(r))),
            Tok::Str(s) => Ok(Expr::Lit(Literal::Str(s))),
            Tok::Ident { name, quoted } => {
                if !quoted {
                    let lower = name.to_ascii_lowercase();
                    match lower.as_str() {
                        "true" => return Ok(Expr::Lit(Literal::Bool(true))),
                        "false" => return Ok(Expr::Lit(Literal::Bool(false))),
                        "undefined" => return Ok(Expr::Lit(Literal::Undefined)),
                        "error" => return Ok(Expr::Lit(Literal::Error)),
                        "is" | "isnt" => {
                            self.pos = self.pos.saturating_sub(1);
                            return Err(self.err(format!("unexpected keyword '{name}'")));
                        }
                        _ => {}
                    }
                    if *self.peek() == Tok::LParen {
                        self.bump();
                        let args = self.comma_list(&Tok::RParen, "')'")?;
                        return Ok(Expr::Call(name, args));
                    }
                }
                Ok(Expr::Attr {
                    scope: None,
                    scope_word: None,
                    name,
                })
            }
            Tok::LParen => {
                let inner = self.expr()?;
                self.expect(&Tok::RParen, "')'")?;
                Ok(Expr::Paren(Box::new(inner)))
            }
            Tok::LBrace => {
                self.enter()?;
                let items = self.comma_list(&Tok::RBrace, "'}'");
                self.leave();
                Ok(Expr::List(Arc::new(items?)))
            }
            Tok::LBracket => {
                self.enter()?;
                let ad = self.ad_body();
                self.leave();
                Ok(Expr::Ad(ad?))
            }
            other => {
                self.pos = self.pos.saturating_sub(1);
                Err(self.err(format!(
                    "expected an expression, found {}",
                    Self::describe(&other)
                )))
            }
        }
    }

    fn comma_list(&mut self, close: &Tok, what: &str) -> Result<Vec<Expr>, ParseError> {
        let mut items = Vec::new();
        if self.peek() == close {
            self.bump();
            return Ok(items);
        }
        loop {
            items.push(self.expr()?);
            if *self.peek() == Tok::Comma {
                self.bump();
                continue;
            }
            self.expect(close, &format!("',' or {what}"))?;
            return Ok(items);
        }
    }

    /// Parses `name = expr; ...` up to and including the closing `]` (the `[` is consumed).
    pub(crate) fn ad_body(&mut self) -> Result<Ad, ParseError> {
        let mut ad = Ad::new();
        loop {
            match self.peek().clone() {
                Tok::RBracket => {
                    self.bump();
                    return Ok(ad);
                }
                Tok::Semi => {
                    self.bump();
                }
                Tok::Ident { name, quoted } => {
                    if !quoted && is_reserved(&name) {
                        return Err(
                            self.err(format!("reserved word '{name}' used as attribute name"))
                        );
                    }
                    self.bump();
                    self.expect(&Tok::Assign, "'='")?;
                    let e = self.expr()?;
                    ad.insert_expr(&name, e);
                    match self.peek() {
                        Tok::Semi => {
                            self.bump();
                        }
                        Tok::RBracket => {}
                        other => {
                            return Err(self.err(format!(
                                "expected ';' or ']', found {}",
                                Self::describe(other)
                            )));
                        }
                    }
                }
                other => {
                    return Err(self.err(format!(
                        "expected attribute name or ']', found {}",
                        Self::describe(&other)
                    )));
                }
            }
        }
    }

    /// Consumes a leading `[` if present.
    pub(crate) fn eat_lbracket(&mut self) -> bool {
        if *self.peek() == Tok::LBracket {
            self.bump();
            true
        } else {
            false
        }
    }
}

/// Words that cannot be used as bare attribute names.
pub(crate) fn is_reserved(name: &str) -> bool {
    ["true", "false", "undefined", "error", "is", "isnt"]
        .iter()
        .any(|w| name.eq_ignore_ascii_case(w))
}

fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}
