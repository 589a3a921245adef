//! No file-level import cycle crosses a module boundary in `broker`, `coordinator`, `net` or
//! `log` (issue 27's "done when").
//!
//! Why: a module boundary should be one-way. When `replica/` imports from `server/` and
//! `server/` imports from `replica/`, neither can be learnt without reading the other — a
//! reader who opens a module to learn it ends up reading its callers too. Files of one module
//! may lean on each other (siblings, and a module's `mod.rs` with its children); across
//! modules the arrows must all point one way.
//!
//! How: every crate's module tree is walked from `lib.rs` with `syn` (following `mod x;` to
//! `x.rs` / `x/mod.rs`, honouring `#[path]`, leaving out modules and items that exist only
//! under `#[cfg(test)]`). Each file's dependencies on the crate's other files are its `use`
//! trees (`crate::`, `super::`, `self::` and paths relative to the module, nested groups and
//! re-exports included) and every path in its code or macro arguments that starts from
//! `crate::`, `super::`, `self::` or a name in the module's scope. A path resolves to the file
//! of its longest module prefix; when the item it names there is itself imported (a `pub use`
//! re-export, or a private `use` a child reaches through `super::`), the import is followed to
//! the file that defines the item. A glob import is an edge to the module's file. Tarjan's
//! algorithm then finds the strongly connected components of the file graph.
//!
//! A file's *home* is the module it belongs to: `lib.rs` the crate root, `x/mod.rs` (or `x.rs`
//! with non-test child files in `x/`) its own module `x`, a leaf `x/y.rs` its parent `x`. A
//! component whose files all share one home is allowed; one with several homes crosses a
//! boundary and fails the test, printed with its files and its edges (crossing edges marked
//! `!!`) so a reader can see what to cut. The cycles that existed when the check was written
//! are listed in [`KNOWN`], each with its reason; the test fails for any cycle not listed and
//! for any listed cycle that no longer exists, so the list only shrinks.

use proc_macro2::{TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Attribute, ImplItem, Item, Meta, Token, TraitItem, UseTree};

/// The crates checked (`crates/<name>/src`).
const CRATES: &[&str] = &["broker", "coordinator", "net", "log"];

/// A crossing cycle allowed for now: its files (relative to `crates/`, sorted) and why.
#[derive(Debug)]
struct Known {
    files: &'static [&'static str],
    why: &'static str,
}

/// The crossing cycles allowed for now: none. A cycle that cannot be cut at once goes here
/// with its reason; cut it, then delete its entry (the test says so).
const KNOWN: &[Known] = &[];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the workspace root")
        .to_path_buf()
}

type ModPath = Vec<String>;

/// One `use` leaf: the path as written (`crate`/`self`/`super` kept), the name it binds (none
/// for `_` and globs) and whether it is a glob.
#[derive(Debug, Clone)]
struct UseLeaf {
    path: Vec<String>,
    binding: Option<String>,
    glob: bool,
}

/// One module of the crate (a file's top module or an inline `mod x { .. }` in it).
#[derive(Debug, Default)]
struct Module {
    file: usize,
    /// Child modules (file-backed or inline).
    children: BTreeSet<String>,
    /// Names of the items defined here.
    items: BTreeSet<String>,
    /// Names bound by `use` here, with the path as written.
    imports: BTreeMap<String, Vec<String>>,
    /// Glob imports here, as written.
    globs: Vec<Vec<String>>,
}

struct SourceFile {
    path: PathBuf,
    module: ModPath,
    /// `lib.rs`, `mod.rs`, a `#[path]` file, or a file with non-test child files.
    owns_dir: bool,
    ast: syn::File,
}

impl SourceFile {
    fn home(&self) -> ModPath {
        let mut home = self.module.clone();
        if !self.owns_dir {
            home.pop();
        }
        home
    }
}

/// A crate's module tree, as the compiler would load it outside `cfg(test)`.
#[derive(Default)]
struct CrateTree {
    src: PathBuf,
    files: Vec<SourceFile>,
    modules: BTreeMap<ModPath, Module>,
    /// Files and directories of test-only modules: not loaded, and not orphans either.
    test_only: Vec<PathBuf>,
}

/// Whether a `#[cfg(..)]` predicate holds only under `test`.
fn test_only_pred(meta: &Meta) -> bool {
    match meta {
        Meta::Path(p) => p.is_ident("test"),
        Meta::List(l) => {
            let Ok(args) = l.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            else {
                return false;
            };
            if l.path.is_ident("all") {
                args.iter().any(test_only_pred)
            } else if l.path.is_ident("any") {
                !args.is_empty() && args.iter().all(test_only_pred)
            } else {
                false
            }
        }
        Meta::NameValue(_) => false,
    }
}

/// Whether the attributes compile the thing only for tests (`#[cfg(test)]`, `#[test]`).
fn test_only(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("test")
            || (a.path().is_ident("cfg")
                && a.parse_args::<Meta>().is_ok_and(|m| test_only_pred(&m)))
    })
}

fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// The name an item defines in its module's namespace, if any.
fn item_name(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Const(i) => &i.ident,
        Item::Enum(i) => &i.ident,
        Item::ExternCrate(i) => i.rename.as_ref().map(|r| &r.1).unwrap_or(&i.ident),
        Item::Fn(i) => &i.sig.ident,
        Item::Macro(i) => i.ident.as_ref()?,
        Item::Mod(i) => &i.ident,
        Item::Static(i) => &i.ident,
        Item::Struct(i) => &i.ident,
        Item::Trait(i) => &i.ident,
        Item::TraitAlias(i) => &i.ident,
        Item::Type(i) => &i.ident,
        Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

fn path_attr(attrs: &[Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

fn flatten_use(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<UseLeaf>) {
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten_use(&p.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(n) if n.ident == "self" => out.push(UseLeaf {
            path: prefix.clone(),
            binding: prefix.last().cloned(),
            glob: false,
        }),
        UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.to_string());
            out.push(UseLeaf {
                path,
                binding: Some(n.ident.to_string()),
                glob: false,
            });
        }
        UseTree::Rename(r) => {
            let mut path = prefix.clone();
            if r.ident != "self" {
                path.push(r.ident.to_string());
            }
            out.push(UseLeaf {
                path,
                binding: Some(r.rename.to_string()).filter(|b| b != "_"),
                glob: false,
            });
        }
        UseTree::Glob(_) => out.push(UseLeaf {
            path: prefix.clone(),
            binding: None,
            glob: true,
        }),
        UseTree::Group(g) => {
            for t in &g.items {
                flatten_use(t, prefix, out);
            }
        }
    }
}

fn use_leaves(u: &syn::ItemUse) -> Vec<UseLeaf> {
    let mut out = Vec::new();
    if u.leading_colon.is_none() {
        flatten_use(&u.tree, &mut Vec::new(), &mut out);
    }
    out
}

fn parse(path: &Path) -> syn::File {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("cannot parse {}: {e}", path.display()))
}

impl CrateTree {
    fn load(src: &Path) -> CrateTree {
        let mut tree = CrateTree {
            src: src.to_path_buf(),
            ..CrateTree::default()
        };
        tree.load_file(src.join("lib.rs"), Vec::new(), true);
        tree
    }

    /// Loads a file as module `module`; `mod_rs`: its children sit beside it, not in a
    /// directory named after it.
    fn load_file(&mut self, path: PathBuf, module: ModPath, mod_rs: bool) {
        let ast = parse(&path);
        let idx = self.files.len();
        let dir = path.parent().unwrap().to_path_buf();
        let child_dir = if mod_rs {
            dir.clone()
        } else {
            dir.join(path.file_stem().unwrap())
        };
        let items = ast.items.clone();
        self.files.push(SourceFile {
            path,
            module: module.clone(),
            owns_dir: mod_rs,
            ast,
        });
        let has_child_files = self.scope(idx, module, &items, &dir, child_dir, false);
        self.files[idx].owns_dir |= has_child_files;
    }

    /// Registers one module's items; returns whether it loaded any child file.
    fn scope(
        &mut self,
        file: usize,
        module: ModPath,
        items: &[Item],
        file_dir: &Path,
        child_dir: PathBuf,
        inline: bool,
    ) -> bool {
        let mut m = Module {
            file,
            ..Module::default()
        };
        let mut child_files = Vec::new();
        let mut loaded_any = false;
        for item in items {
            let test = test_only(item_attrs(item));
            if let Item::Mod(im) = item {
                let name = im.ident.to_string();
                let file_path = match path_attr(&im.attrs) {
                    Some(p) if inline => Some((child_dir.join(p), true)),
                    Some(p) => Some((file_dir.join(p), true)),
                    None if im.content.is_some() => None,
                    None => {
                        let flat = child_dir.join(format!("{name}.rs"));
                        let nested = child_dir.join(&name).join("mod.rs");
                        Some(if flat.exists() {
                            (flat, false)
                        } else {
                            (nested, true)
                        })
                    }
                };
                if test {
                    if let Some((p, _)) = &file_path {
                        self.test_only.push(p.clone());
                    }
                    self.test_only.push(child_dir.join(&name));
                    continue;
                }
                m.children.insert(name.clone());
                let mut sub = module.clone();
                sub.push(name.clone());
                match (&im.content, file_path) {
                    (_, Some((p, mod_rs))) => child_files.push((p, sub, mod_rs)),
                    (Some((_, content)), None) => {
                        loaded_any |=
                            self.scope(file, sub, content, file_dir, child_dir.join(&name), true);
                    }
                    (None, None) => unreachable!(),
                }
                continue;
            }
            if test {
                continue;
            }
            if let Item::Use(u) = item {
                for leaf in use_leaves(u) {
                    if leaf.glob {
                        m.globs.push(leaf.path);
                    } else if let Some(b) = leaf.binding {
                        m.imports.entry(b).or_insert(leaf.path);
                    }
                }
            } else if let Some(name) = item_name(item) {
                m.items.insert(name);
            }
        }
        self.modules.insert(module, m);
        for (p, sub, mod_rs) in child_files {
            assert!(
                p.exists(),
                "module {} has no file {}",
                sub.join("::"),
                p.display()
            );
            self.load_file(p, sub, mod_rs);
            loaded_any = true;
        }
        loaded_any
    }

    fn rel(&self, file: usize) -> String {
        let p = &self.files[file].path;
        let krate = self.src.parent().unwrap().parent().unwrap();
        p.strip_prefix(krate)
            .unwrap_or(p)
            .to_string_lossy()
            .replace('\\', "/")
    }

    /// The `.rs` files under `src` that the module tree neither loads nor leaves out as tests.
    fn orphans(&self) -> Vec<PathBuf> {
        let mut all = Vec::new();
        rust_files(&self.src, &mut all);
        let loaded: BTreeSet<&PathBuf> = self.files.iter().map(|f| &f.path).collect();
        all.into_iter()
            .filter(|p| !loaded.contains(p))
            .filter(|p| !self.test_only.iter().any(|t| p.starts_with(t)))
            .collect()
    }

    /// `segs` as written in module `ctx`, made absolute (from the crate root); `None` for a
    /// path outside the crate (another crate, `std`, a generic, a local).
    fn absolutize(&self, ctx: &[String], segs: &[String], depth: usize) -> Option<ModPath> {
        let first = segs.first()?;
        let mut base: ModPath = ctx.to_vec();
        let mut i = 0;
        if first == "crate" || first == "$crate" {
            base.clear();
            i = 1;
        } else if first != "self" && first != "super" {
            let m = self.modules.get(ctx)?;
            if m.children.contains(first) || m.items.contains(first) {
                // relative to this module
            } else if let Some(target) = m.imports.get(first) {
                if depth > 16 || target.first() == Some(first) && target.len() == 1 {
                    return None;
                }
                let mut abs = self.absolutize(ctx, target, depth + 1)?;
                abs.extend(segs[1..].iter().cloned());
                return Some(abs);
            } else {
                return None;
            }
        }
        while segs.get(i).is_some_and(|s| s == "self") {
            i += 1;
        }
        while segs.get(i).is_some_and(|s| s == "super") {
            base.pop()?;
            i += 1;
        }
        base.extend(segs[i..].iter().cloned());
        Some(base)
    }

    /// The file that defines what the absolute path `abs` names.
    fn resolve(&self, abs: &[String], depth: usize) -> usize {
        let mut k = abs.len();
        while k > 0 && !self.modules.contains_key(&abs[..k]) {
            k -= 1;
        }
        let module = &abs[..k];
        let m = &self.modules[module];
        if k == abs.len() || depth > 16 {
            return m.file;
        }
        let name = &abs[k];
        if m.items.contains(name) {
            return m.file;
        }
        if let Some(target) = m.imports.get(name) {
            return match self.absolutize(module, target, 0) {
                Some(mut t) => {
                    t.extend(abs[k + 1..].iter().cloned());
                    self.resolve(&t, depth + 1)
                }
                // a re-export of another crate's item: the path still goes through here
                None => m.file,
            };
        }
        for g in &m.globs {
            let Some(gabs) = self.absolutize(module, g, 0) else {
                continue;
            };
            let Some(gm) = self.modules.get(&gabs) else {
                continue;
            };
            if gm.items.contains(name) || gm.imports.contains_key(name) {
                let mut t = gabs.clone();
                t.extend(abs[k..].iter().cloned());
                return self.resolve(&t, depth + 1);
            }
        }
        m.file
    }

    /// The file graph: `(from, to) -> the paths (as written) that make the edge`.
    fn edges(&self) -> BTreeMap<(usize, usize), BTreeSet<String>> {
        let mut edges: BTreeMap<(usize, usize), BTreeSet<String>> = BTreeMap::new();
        for (idx, f) in self.files.iter().enumerate() {
            let mut refs = Refs {
                ctx: f.module.clone(),
                out: Vec::new(),
            };
            for item in &f.ast.items {
                refs.visit_item(item);
            }
            for r in refs.out {
                let Some(abs) = self.absolutize(&r.ctx, &r.segs, 0) else {
                    continue;
                };
                let to = self.resolve(&abs, 0);
                if to != idx {
                    edges.entry((idx, to)).or_default().insert(r.text);
                }
            }
        }
        edges
    }
}

/// One path a file mentions, in the module it is written in.
#[derive(Debug)]
struct Ref {
    ctx: ModPath,
    segs: Vec<String>,
    text: String,
}

/// Collects the paths a file mentions (test-only items left out).
#[derive(Debug)]
struct Refs {
    ctx: ModPath,
    out: Vec<Ref>,
}

impl Refs {
    fn push(&mut self, segs: Vec<String>, text: String) {
        self.out.push(Ref {
            ctx: self.ctx.clone(),
            segs,
            text,
        });
    }

    /// Paths in a macro's tokens (`ident(::ident)+`, `$crate::..` too), not their tails.
    fn scan(&mut self, tokens: TokenStream) {
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        let colons = |i: usize| {
            matches!((tts.get(i), tts.get(i + 1)),
                (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                    if a.as_char() == ':' && b.as_char() == ':')
        };
        let mut i = 0;
        while i < tts.len() {
            match &tts[i] {
                TokenTree::Group(g) => self.scan(g.stream()),
                TokenTree::Ident(id) if i < 2 || !colons(i - 2) => {
                    let dollar = i > 0
                        && matches!(&tts[i - 1], TokenTree::Punct(p) if p.as_char() == '$')
                        && *id == "crate";
                    let mut segs = vec![if dollar {
                        "$crate".to_string()
                    } else {
                        id.to_string()
                    }];
                    let mut j = i + 1;
                    while colons(j) {
                        let Some(TokenTree::Ident(next)) = tts.get(j + 2) else {
                            break;
                        };
                        segs.push(next.to_string());
                        j += 3;
                    }
                    if segs.len() >= 2 {
                        let text = segs.join("::");
                        self.push(segs, text);
                        i = j;
                        continue;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Refs {
    fn visit_item(&mut self, i: &'ast Item) {
        if !test_only(item_attrs(i)) {
            visit::visit_item(self, i);
        }
    }

    fn visit_item_mod(&mut self, i: &'ast syn::ItemMod) {
        // file-backed children are files of their own
        if let Some((_, items)) = &i.content {
            self.ctx.push(i.ident.to_string());
            for item in items {
                self.visit_item(item);
            }
            self.ctx.pop();
        }
    }

    fn visit_impl_item(&mut self, i: &'ast ImplItem) {
        let attrs = match i {
            ImplItem::Const(c) => &c.attrs,
            ImplItem::Fn(f) => &f.attrs,
            ImplItem::Type(t) => &t.attrs,
            ImplItem::Macro(m) => &m.attrs,
            _ => return visit::visit_impl_item(self, i),
        };
        if !test_only(attrs) {
            visit::visit_impl_item(self, i);
        }
    }

    fn visit_trait_item(&mut self, i: &'ast TraitItem) {
        let attrs = match i {
            TraitItem::Const(c) => &c.attrs,
            TraitItem::Fn(f) => &f.attrs,
            TraitItem::Type(t) => &t.attrs,
            TraitItem::Macro(m) => &m.attrs,
            _ => return visit::visit_trait_item(self, i),
        };
        if !test_only(attrs) {
            visit::visit_trait_item(self, i);
        }
    }

    fn visit_stmt(&mut self, s: &'ast syn::Stmt) {
        let attrs = match s {
            syn::Stmt::Local(l) => &l.attrs,
            syn::Stmt::Macro(m) => &m.attrs,
            _ => return visit::visit_stmt(self, s),
        };
        if !test_only(attrs) {
            visit::visit_stmt(self, s);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        for leaf in use_leaves(u) {
            let text = format!(
                "use {}{}",
                leaf.path.join("::"),
                if leaf.glob { "::*" } else { "" }
            );
            self.push(leaf.path, text);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() && p.segments.len() >= 2 {
            let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
            let text = segs.join("::");
            self.push(segs, text);
        }
        visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.visit_path(&m.path);
        self.scan(m.tokens.clone());
    }

    // `pub(in crate::x)` names a module without depending on it; attributes are not code.
    fn visit_vis_restricted(&mut self, _: &'ast syn::VisRestricted) {}
    fn visit_attribute(&mut self, _: &'ast Attribute) {}
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Tarjan's strongly connected components of the graph on `0..n`.
fn tarjan(n: usize, edges: &BTreeMap<(usize, usize), BTreeSet<String>>) -> Vec<Vec<usize>> {
    struct State {
        adj: Vec<Vec<usize>>,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn connect(s: &mut State, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for k in 0..s.adj[v].len() {
            let w = s.adj[v][k];
            match s.index[w] {
                None => {
                    connect(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            comp.sort();
            s.out.push(comp);
        }
    }
    let mut adj = vec![Vec::new(); n];
    for &(a, b) in edges.keys() {
        adj[a].push(b);
    }
    let mut s = State {
        adj,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            connect(&mut s, v);
        }
    }
    s.out
}

/// A strongly connected component whose files have more than one home.
#[derive(Debug)]
struct Crossing {
    files: Vec<String>,
    report: String,
}

/// The crossing components of the crate whose sources are in `src`.
fn crossing_cycles(src: &Path) -> Vec<Crossing> {
    let tree = CrateTree::load(src);
    let orphans = tree.orphans();
    assert!(
        orphans.is_empty(),
        "files under {} that no `mod` declares (the check would not see them): {orphans:#?}",
        src.display()
    );
    let edges = tree.edges();
    let mut found = Vec::new();
    for comp in tarjan(tree.files.len(), &edges) {
        let homes: BTreeSet<ModPath> = comp.iter().map(|&f| tree.files[f].home()).collect();
        if homes.len() < 2 {
            continue;
        }
        let mut files: Vec<String> = comp.iter().map(|&f| tree.rel(f)).collect();
        files.sort();
        let mut report = String::from("  files (home):\n");
        let mut by_name: Vec<usize> = comp.clone();
        by_name.sort_by_key(|&f| tree.rel(f));
        for &f in &by_name {
            let home = tree.files[f].home();
            let home = if home.is_empty() {
                "crate".to_string()
            } else {
                home.join("::")
            };
            let _ = writeln!(report, "    {} ({home})", tree.rel(f));
        }
        report.push_str("  edges (!! = crosses a boundary):\n");
        let mut lines = Vec::new();
        for &a in &comp {
            for &b in &comp {
                if let Some(via) = edges.get(&(a, b)) {
                    let cross = tree.files[a].home() != tree.files[b].home();
                    let via: Vec<&str> = via.iter().map(String::as_str).collect();
                    lines.push(format!(
                        "    {} {} -> {} via {}",
                        if cross { "!!" } else { "  " },
                        tree.rel(a),
                        tree.rel(b),
                        via.join(", ")
                    ));
                }
            }
        }
        lines.sort();
        for l in lines {
            let _ = writeln!(report, "{l}");
        }
        found.push(Crossing { files, report });
    }
    found.sort_by(|a, b| a.files.cmp(&b.files));
    found
}

#[test]
fn no_import_cycle_crosses_a_module_boundary() {
    let crates = root().join("crates");
    let mut found = Vec::new();
    for krate in CRATES {
        found.extend(crossing_cycles(&crates.join(krate).join("src")));
    }
    let mut failures = String::new();
    for c in &found {
        if !KNOWN.iter().any(|k| k.files == c.files.as_slice()) {
            let _ = writeln!(
                failures,
                "import cycle across module boundaries (not in KNOWN):\n{}  as a KNOWN entry: \
                 Known {{ files: &{:?}, why: \"..\" }}\n",
                c.report, c.files
            );
        }
    }
    for k in KNOWN {
        if !found.iter().any(|c| c.files.as_slice() == k.files) {
            let _ = writeln!(
                failures,
                "KNOWN cycle no longer exists (cut or changed: delete or update its entry): \
                 {:?} ({})\n",
                k.files, k.why
            );
        }
    }
    assert!(failures.is_empty(), "\n{failures}");
}

/// The walk and the resolver on a crate made for the purpose.
#[test]
fn the_checker_follows_re_exports_and_finds_crossing_cycles() {
    let dir = std::env::temp_dir().join(format!("kraftd-import-cycles-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let src = dir.join("fixture").join("src");
    let write = |rel: &str, text: &str| {
        let p = src.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "lib.rs",
        "pub mod a;\npub mod b;\nmod c;\npub fn c_user() -> c::Gone { c::Gone }\n",
    );
    // a/mod.rs re-exports a leaf's type; b uses it through the re-export
    write(
        "a/mod.rs",
        "mod leaf;\npub use leaf::Thing;\n#[cfg(test)]\nmod tests;\n",
    );
    write(
        "a/leaf.rs",
        "pub struct Thing;\nfn f() { let _ = crate::b::helper(); }\n",
    );
    write("a/tests.rs", "use crate::c::Gone;\n");
    write(
        "b.rs",
        "use crate::a::Thing;\npub fn helper() {}\n#[cfg(test)]\nmod t { use crate::c::*; }\n",
    );
    // c and lib.rs share the crate root as home: their cycle is allowed
    write(
        "c.rs",
        "use super::*;\npub struct Gone;\nfn g() { format!(\"{}\", crate::c_user()); }\n",
    );
    let found = crossing_cycles(&src);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0].files,
        ["fixture/src/a/leaf.rs", "fixture/src/b.rs"]
    );
    assert!(
        found[0]
            .report
            .contains("fixture/src/b.rs -> fixture/src/a/leaf.rs via use crate::a::Thing"),
        "{}",
        found[0].report
    );
}
