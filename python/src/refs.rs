//! The attributes an expression refers to, and partial evaluation.
//!
//! `ClassAd.externalRefs(expr)` lists what `expr` needs from outside the
//! ad, `internalRefs(expr)` what it takes from the ad, following the ad's
//! own attributes to what they refer to in turn (as HTCondor's
//! `GetExternalReferences`/`GetInternalReferences` do). `flatten`
//! evaluates what the ad decides and keeps the rest as an expression.

use gleaner_classad::{Ad, BinOp, EvalContext, Expr, Literal, Scope, Value};
use std::collections::BTreeSet;

/// Every attribute name `e` refers to, as written, with its scope word
/// when it has one (`TARGET.Memory`); names inside nested ad literals are
/// the nested ad's and are not listed unless undefined there.
pub fn names(e: &Expr) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    walk(e, &mut |r| {
        out.insert(r.shown());
    });
    out
}

/// One attribute reference.
struct Ref<'a> {
    scope: Option<Scope>,
    scope_word: Option<&'a str>,
    name: &'a str,
}

impl Ref<'_> {
    fn shown(&self) -> String {
        match (self.scope, self.scope_word) {
            (Some(_), Some(w)) => format!("{w}.{}", self.name),
            (Some(Scope::My), None) => format!("MY.{}", self.name),
            (Some(Scope::Target), None) => format!("TARGET.{}", self.name),
            (None, _) => self.name.to_string(),
        }
    }
}

fn walk<'a>(e: &'a Expr, f: &mut dyn FnMut(Ref<'a>)) {
    match e {
        Expr::Lit(_) => {}
        Expr::Attr {
            scope,
            scope_word,
            name,
        } => f(Ref {
            scope: *scope,
            scope_word: scope_word.as_deref(),
            name,
        }),
        Expr::List(items) => items.iter().for_each(|i| walk(i, f)),
        Expr::Ad(ad) => {
            // A nested ad's own names resolve inside it.
            for (_, v) in ad.iter() {
                walk(v, &mut |r: Ref<'a>| {
                    if r.scope.is_some() || !ad.contains(r.name) {
                        f(r);
                    }
                });
            }
        }
        // `n.q`: a reference to `n` (what is selected from it is its own).
        Expr::Select(base, _) => walk(base, f),
        Expr::Index(a, b) | Expr::Binary(_, a, b) => {
            walk(a, f);
            walk(b, f);
        }
        Expr::Unary(_, a) | Expr::Paren(a) => walk(a, f),
        Expr::Cond(c, a, b) => {
            walk(c, f);
            walk(a, f);
            walk(b, f);
        }
        Expr::Call(_, args) => args.iter().for_each(|a| walk(a, f)),
    }
}

/// `ClassAd.externalRefs` and `internalRefs` of `e` against `ad`:
/// (external, internal), each sorted and without duplicates (names
/// compared without case). An unscoped name the ad binds is internal and
/// its own expression is followed; any other name, and every scoped one,
/// is external.
pub fn external_internal(ad: &Ad, e: &Expr) -> (Vec<String>, Vec<String>) {
    let mut external = Vec::new();
    let mut internal = Vec::new();
    let mut seen = BTreeSet::new();
    let mut stack = vec![e.clone()];
    while let Some(e) = stack.pop() {
        walk(&e, &mut |r| {
            let key = r.shown().to_ascii_lowercase();
            if !seen.insert(key) {
                return;
            }
            match (r.scope, ad.get(r.name)) {
                (None, Some(v)) => {
                    internal.push(r.name.to_string());
                    stack.push(v.clone());
                }
                _ => external.push(r.shown()),
            }
        });
    }
    external.sort_by_key(|s| s.to_ascii_lowercase());
    internal.sort_by_key(|s| s.to_ascii_lowercase());
    (external, internal)
}

/// `ClassAd.flatten(expr)`: `expr` with every part the ad decides
/// replaced by its value. A reference to an attribute of the ad becomes
/// that attribute's value when it has one; parts that still depend on
/// something undefined stay as written.
pub fn flatten(ad: &Ad, e: &Expr, now_unix: i64) -> Expr {
    Flattener {
        ad,
        now_unix,
        depth: 0,
    }
    .flat(e)
}

struct Flattener<'a> {
    ad: &'a Ad,
    now_unix: i64,
    depth: usize,
}

/// Deeper than this the expression is left as it is (cycles, huge trees).
const MAX_FLATTEN_DEPTH: usize = 64;

impl Flattener<'_> {
    fn value_of(&self, e: &Expr) -> Value {
        EvalContext::new(self.now_unix)
            .with_my(self.ad)
            .with_target_fallback(false)
            .eval(e)
    }

    /// The literal an expression evaluates to, if it is decided (not
    /// undefined, no list or ad).
    fn decided(&self, e: &Expr) -> Option<Expr> {
        match self.value_of(e) {
            Value::Undefined | Value::List(_) | Value::Ad(_) => None,
            v => Some(v.to_expr()),
        }
    }

    fn flat(&mut self, e: &Expr) -> Expr {
        if self.depth > MAX_FLATTEN_DEPTH {
            return e.clone();
        }
        self.depth += 1;
        let out = self.flat_inner(e);
        self.depth -= 1;
        out
    }

    fn flat_inner(&mut self, e: &Expr) -> Expr {
        match e {
            Expr::Lit(_) | Expr::List(_) | Expr::Ad(_) => e.clone(),
            Expr::Attr {
                scope: None, name, ..
            } => match self.ad.get(name) {
                Some(v) => {
                    let v = v.clone();
                    let flat = self.flat(&v);
                    if matches!(flat, Expr::Lit(_)) {
                        flat
                    } else {
                        e.clone()
                    }
                }
                None => e.clone(),
            },
            Expr::Attr { .. } => e.clone(),
            Expr::Select(base, name) => {
                if let Some(lit) = self.decided(e) {
                    return lit;
                }
                Expr::Select(Box::new(self.flat(base)), name.clone())
            }
            Expr::Index(a, b) => {
                if let Some(lit) = self.decided(e) {
                    return lit;
                }
                Expr::Index(Box::new(self.flat(a)), Box::new(self.flat(b)))
            }
            Expr::Paren(a) => {
                let inner = self.flat(a);
                if matches!(inner, Expr::Lit(_)) {
                    inner
                } else {
                    Expr::Paren(Box::new(inner))
                }
            }
            Expr::Unary(op, a) => {
                let inner = self.flat(a);
                let rebuilt = Expr::Unary(*op, Box::new(inner));
                self.fold(rebuilt)
            }
            Expr::Binary(op, a, b) => {
                let (a, b) = (self.flat(a), self.flat(b));
                // `false && x` and `true || x` are decided by one side.
                if let (BinOp::And, Expr::Lit(Literal::Bool(false)))
                | (BinOp::Or, Expr::Lit(Literal::Bool(true))) = (op, &a)
                {
                    return a;
                }
                self.fold(Expr::Binary(*op, Box::new(a), Box::new(b)))
            }
            Expr::Cond(c, a, b) => {
                let c = self.flat(c);
                match &c {
                    Expr::Lit(Literal::Bool(true)) => self.flat(a),
                    Expr::Lit(Literal::Bool(false)) => self.flat(b),
                    _ => Expr::Cond(Box::new(c), Box::new(self.flat(a)), Box::new(self.flat(b))),
                }
            }
            Expr::Call(name, args) => {
                let args: Vec<Expr> = args.iter().map(|a| self.flat(a)).collect();
                self.fold(Expr::Call(name.clone(), args))
            }
        }
    }

    /// An operation whose operands are all literals becomes its value.
    fn fold(&self, e: Expr) -> Expr {
        let all_literal = match &e {
            Expr::Unary(_, a) => matches!(**a, Expr::Lit(_)),
            Expr::Binary(_, a, b) => matches!(**a, Expr::Lit(_)) && matches!(**b, Expr::Lit(_)),
            Expr::Call(_, args) => args.iter().all(|a| matches!(a, Expr::Lit(_))),
            _ => false,
        };
        if !all_literal {
            return e;
        }
        match self.value_of(&e) {
            Value::List(_) | Value::Ad(_) => e,
            v => v.to_expr(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_classad::{parse_expr, unparse_expr};

    fn ad() -> Ad {
        Ad::parse_new("[ a = 1; b = a + x; n = [ q = 1 ] ]").unwrap()
    }

    fn refs(e: &str) -> (Vec<String>, Vec<String>) {
        external_internal(&ad(), &parse_expr(e).unwrap())
    }

    #[test]
    fn references_follow_the_ads_attributes() {
        assert_eq!(refs("a + x"), (vec!["x".into()], vec!["a".into()]));
        assert_eq!(refs("b"), (vec!["x".into()], vec!["a".into(), "b".into()]));
        assert_eq!(
            refs("TARGET.y + MY.a + z").0,
            vec!["MY.a".to_string(), "TARGET.y".into(), "z".into()]
        );
        assert_eq!(refs("a + a + x + x"), (vec!["x".into()], vec!["a".into()]));
        assert_eq!(refs("[ k = 1; m = k + w ].m").0, vec!["w".to_string()]);
    }

    fn flat(e: &str) -> String {
        unparse_expr(&flatten(&ad(), &parse_expr(e).unwrap(), 0))
    }

    #[test]
    fn flatten_evaluates_what_the_ad_decides() {
        assert_eq!(flat("a + x"), "1 + x");
        assert_eq!(flat("a + a + x + x"), "2 + x + x");
        assert_eq!(flat("b"), "b");
        assert_eq!(flat("a > 0 ? y : z"), "y");
        assert_eq!(flat("n.q + 1"), "2");
    }
}
