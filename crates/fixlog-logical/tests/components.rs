//! Components: what instantiation produces (names, types, rules, directives, orphans,
//! overrides, lookup) and every error it reports, with its location.

use fixlog_logical::*;

mod support;
use support::{compile, err1, errs_with_notes as errs};

fn e(msg: &str, loc: &str) -> (String, String) {
    (msg.to_string(), loc.to_string())
}

fn names(p: &Program) -> Vec<&str> {
    let mut v: Vec<&str> = p.relations.iter().map(|r| r.name.as_str()).collect();
    v.sort_unstable();
    v
}

/// The rules whose head is `rel`, as the names of their body atoms' relations.
fn bodies(p: &Program, rel: &str) -> Vec<Vec<String>> {
    let id = p.relation_id(rel).unwrap();
    let mut out: Vec<Vec<String>> = p
        .rules
        .iter()
        .filter(|r| r.head.rel == id)
        .map(|r| {
            r.body
                .iter()
                .filter_map(|l| match l {
                    Literal::Atom(a) => Some(p.relations[a.rel].name.clone()),
                    Literal::Negation(a) => Some(format!("!{}", p.relations[a.rel].name)),
                    _ => None,
                })
                .collect()
        })
        .collect();
    out.sort();
    out
}

fn fact_count(p: &Program, rel: &str) -> usize {
    let id = p.relation_id(rel).unwrap();
    p.facts.iter().filter(|f| f.rel == id).count()
}

#[test]
fn instances_get_prefixed_relations_types_and_directives() {
    let p = compile(
        ".decl g(x: symbol)\n\
         g(\"k\").\n\
         .comp C<T> {\n\
           .type Id <: T\n\
           .decl r(x: Id, y: T) output\n\
           .decl s(x: T)\n\
           r(x, y) :- s(x), s(y), !g(\"j\").\n\
           s(1).\n\
           .printsize s\n\
         }\n\
         .init a = C<number>\n\
         .init b = C<unsigned>\n\
         .decl top(x: number)\n\
         top(x) :- a.r(x, _), b.s(_).\n",
    );
    assert_eq!(names(&p), ["a.r", "a.s", "b.r", "b.s", "g", "top"]);
    let ar = &p.relations[p.relation_id("a.r").unwrap()];
    assert_eq!(ar.columns[0].type_name, "a.Id");
    assert_eq!(ar.columns[1].type_name, "number");
    assert_eq!(ar.outputs.len(), 1);
    let br = &p.relations[p.relation_id("b.r").unwrap()];
    assert_eq!(br.columns[0].type_name, "b.Id");
    assert_eq!(br.types(), vec![ColType::Unsigned, ColType::Unsigned]);
    assert!(p.relations[p.relation_id("a.s").unwrap()].printsize);
    assert!(p.relations[p.relation_id("b.s").unwrap()].printsize);
    assert!(!p.relations[p.relation_id("top").unwrap()].printsize);
    // Rules refer to their own instance's relations and to the program's `g`.
    assert_eq!(bodies(&p, "a.r"), [["a.s", "a.s", "!g"]]);
    assert_eq!(bodies(&p, "b.r"), [["b.s", "b.s", "!g"]]);
    assert_eq!(bodies(&p, "top"), [["a.r", "b.s"]]);
    assert_eq!(fact_count(&p, "a.s"), 1);
    assert_eq!(fact_count(&p, "b.s"), 1);
}

#[test]
fn a_component_without_instances_produces_nothing() {
    let p = compile(".comp C { .decl r(x: number) r(1). r(\"not even checked\"). }\n.decl t(x: number)\nt(1).\n");
    assert_eq!(names(&p), ["t"]);
}

#[test]
fn orphan_clauses_belong_to_the_scope_declaring_their_head() {
    // Soufflé's documented example: `R` of `Count` is `A`'s, `Out` is the program's.
    let p = compile(
        ".decl Out(x: number)\n\
         .comp A {\n\
           .decl R(x: number)\n\
           .comp Count {\n\
             R(1).\n\
             R(x + 1) :- R(x), x < 10.\n\
           }\n\
           .init myCount = Count\n\
           Out(x) :- R(x).\n\
         }\n\
         .init myA = A\n\
         .output Out\n",
    );
    assert_eq!(names(&p), ["Out", "myA.R"]);
    assert_eq!(bodies(&p, "myA.R"), [["myA.R"]]);
    assert_eq!(bodies(&p, "Out"), [["myA.R"]]);
    assert_eq!(fact_count(&p, "myA.R"), 1);
}

#[test]
fn nested_instances_are_named_through_every_level() {
    let p = compile(
        ".comp Leaf { .decl v(x: number) v(1). }\n\
         .comp Mid { .init l = Leaf  .decl m(x: number)  m(x) :- l.v(x). }\n\
         .comp Top { .init mid = Mid  .decl t(x: number)  t(x) :- mid.m(x), mid.l.v(x). }\n\
         .init top = Top\n\
         .decl out(x: number)\n\
         out(x) :- top.mid.l.v(x), top.t(x).\n",
    );
    assert_eq!(names(&p), ["out", "top.mid.l.v", "top.mid.m", "top.t"]);
    assert_eq!(bodies(&p, "top.mid.m"), [["top.mid.l.v"]]);
    assert_eq!(bodies(&p, "top.t"), [["top.mid.m", "top.mid.l.v"]]);
}

#[test]
fn override_replaces_the_base_rules_of_that_relation_only() {
    let p = compile(
        ".decl e(x: number)\n\
         .comp Base {\n\
           .decl R(x: number) overridable\n\
           .decl S(x: number)\n\
           R(1). R(x) :- e(x).\n\
           S(x) :- R(x).\n\
         }\n\
         .comp Sub : Base {\n\
           .override R\n\
           R(2).\n\
         }\n\
         .init b = Base\n\
         .init s = Sub\n",
    );
    assert_eq!(fact_count(&p, "b.R"), 1);
    assert_eq!(bodies(&p, "b.R"), [["e"]]);
    // Sub's R: its own fact only, none of Base's; Base's rule for S reads Sub's R.
    assert_eq!(fact_count(&p, "s.R"), 1);
    assert!(bodies(&p, "s.R").is_empty());
    assert_eq!(bodies(&p, "s.S"), [["s.R"]]);
    let r = p.relation_id("s.R").unwrap();
    let fact = p.facts.iter().find(|f| f.rel == r).unwrap();
    assert_eq!(fact.values, vec![2]);
}

#[test]
fn type_parameters_pass_through_bases_and_name_components() {
    let p = compile(
        ".comp A<T> { .decl a(x: T) }\n\
         .comp B<K> : A<K> { .decl b(x: K) b(x) :- a(x). }\n\
         .comp One { .decl one(x: symbol) one(\"1\"). }\n\
         .comp Select<S> { .init chosen = S }\n\
         .init b = B<float>\n\
         .init s = Select<One>\n",
    );
    assert_eq!(names(&p), ["b.a", "b.b", "s.chosen.one"]);
    assert_eq!(
        p.relations[p.relation_id("b.a").unwrap()].types(),
        vec![ColType::Float]
    );
}

#[test]
fn components_are_found_in_enclosing_scopes_and_in_bases() {
    // `Helper` is declared in `Base`; `Derived` (inheriting it) instantiates it.
    let p = compile(
        ".comp Base { .comp Helper { .decl h(x: number) h(1). } }\n\
         .comp Derived : Base { .init help = Helper }\n\
         .comp Outer { .comp Local { .decl l(x: number) l(2). } .comp In { .init loc = Local } .init in = In }\n\
         .init d = Derived\n\
         .init o = Outer\n",
    );
    assert_eq!(names(&p), ["d.help.h", "o.in.loc.l"]);
}

#[test]
fn type_parameters_are_not_visible_in_nested_components() {
    // As in Soufflé, a nested component only sees the parameters it is given.
    let (m, l) =
        err1(".comp O<T> { .comp I { .decl r(x: T) } .init i = I }\n.init o = O<number>\n");
    assert_eq!(m, "unknown type `T`");
    assert_eq!(l, "1:35");
}

#[test]
fn errors_inside_instantiated_code_point_into_the_component() {
    // Two instances, one error: reported once, at the component's text.
    assert_eq!(
        err1(".comp A {\n  .decl r(x: number)\n  r(\"s\").\n}\n.init a = A\n.init b = A\n"),
        e(
            "type mismatch: a string constant is used where a `number` is expected",
            "3:5"
        )
    );
    let (m, l) = err1(".comp A {\n  .decl r(x: number)\n  r(x) :- nothing(x).\n}\n.init a = A\n");
    assert_eq!(m, "unknown relation `nothing`");
    assert_eq!(l, "3:11");
}

#[test]
fn unknown_components() {
    assert_eq!(
        err1(".comp Graph { }\n.init g = Grahp\n"),
        e("unknown component `Grahp`", "2:11")
    );
    assert_eq!(
        err1(".comp A : Nope { }\n"),
        e("unknown component `Nope`", "1:11")
    );
    // Through a type parameter: only instantiation knows, and says where.
    let e1 = errs(".comp C<S> { .init s = S }\n.init c = C<Nope>\n");
    assert_eq!(e1.len(), 1);
    assert_eq!(e1[0].0, "unknown component `Nope` (the type parameter `S`)");
    assert_eq!(e1[0].1, "1:24");
    assert_eq!(e1[0].2, ["note: in instance `c` declared at t.dl:2:1"]);
    let e2 = errs(".comp C<S> : S { }\n.init c = C<Nope>\n");
    assert_eq!(e2[0].0, "unknown component `Nope` (the type parameter `S`)");
    assert_eq!(e2[0].1, "1:14");
}

#[test]
fn wrong_number_of_type_parameters() {
    assert_eq!(
        err1(".comp A<T> { }\n.init a = A<number, symbol>\n"),
        e(
            "component `A` takes 1 type parameter but 2 were given",
            "2:11"
        )
    );
    assert_eq!(
        err1(".comp A<T, U> { }\n.init a = A\n"),
        e(
            "component `A` takes 2 type parameters but 0 were given",
            "2:11"
        )
    );
    assert_eq!(
        err1(".comp A { }\n.comp B : A<number> { }\n"),
        e(
            "component `A` takes 0 type parameters but 1 was given",
            "2:11"
        )
    );
}

#[test]
fn cyclic_inheritance() {
    assert_eq!(
        errs(".comp A : B { }\n.comp B : A { }\n.init a = A\n")
            .into_iter()
            .map(|(m, l, _)| (m, l))
            .collect::<Vec<_>>(),
        [
            e(
                "component `A` inherits from itself (a cycle in inheritance)",
                "1:7"
            ),
            e(
                "component `B` inherits from itself (a cycle in inheritance)",
                "2:7"
            ),
        ]
    );
    assert_eq!(
        err1(".comp A : A { }\n"),
        e(
            "component `A` inherits from itself (a cycle in inheritance)",
            "1:7"
        )
    );
}

#[test]
fn duplicate_and_clashing_names() {
    assert_eq!(
        err1(".comp A { }\n.init a = A\n.init a = A\n"),
        e("instance `a` is declared more than once", "3:7")
    );
    assert_eq!(
        err1(".comp A { }\n.comp B { .init x = A\n .init x = A }\n"),
        e(
            "instance `x` is declared more than once in component `B`",
            "3:8"
        )
    );
    assert_eq!(
        err1(".decl a(x: number)\n.comp A { }\n.init a = A\n"),
        e(
            "instance `a` has the same name as a relation (Soufflé: name clash)",
            "3:7"
        )
    );
    assert_eq!(
        err1(".type T <: number\n.comp T { }\n"),
        e(
            "component `T` has the same name as a type (Soufflé: name clash)",
            "2:7"
        )
    );
    assert_eq!(
        err1(".comp A { }\n.comp A { }\n"),
        e("component `A` is declared more than once", "2:7")
    );
    // A relation declared by both a base and the derived component (Soufflé:
    // "Redefinition of relation").
    assert_eq!(
        err1(".comp A { .decl r(x: number) }\n.comp B : A {\n .decl r(x: number) }\n.init b = B\n"),
        e("relation `b.r` is declared more than once", "3:8")
    );
}

#[test]
fn override_errors() {
    assert_eq!(
        err1(".comp A { .decl r(x: number) r(1). }\n.comp B : A { .override r }\n"),
        e("relation `r` of component `A` is not overridable", "2:25")
    );
    assert_eq!(
        err1(".comp A { .decl r(x: number) overridable\n .override r }\n"),
        e(
            "`.override r` in component `A`, which declares `r` itself: only an inherited relation can be overridden",
            "2:12"
        )
    );
    assert_eq!(
        err1(".decl r(x: number)\n.override r\n"),
        e("`.override` is only allowed inside a component", "2:1")
    );
    // Overriding an inherited, overridable relation through two levels is fine.
    compile(
        ".comp A { .decl r(x: number) overridable r(1). }\n.comp B : A { }\n\
         .comp C : B { .override r r(2). }\n.init c = C\n",
    );
}

#[test]
fn instantiation_is_bounded() {
    let (m, l) = err1(".comp A { .init x = A }\n.init a = A\n");
    assert_eq!(
        m,
        "component instantiation is nested more than 100 levels deep"
    );
    assert_eq!(l, "1:11");
    let all = errs(".comp A { .init x = A }\n.init a = A\n");
    // The chain is summarised: three innermost instances, a count, the outermost.
    assert_eq!(all[0].2.len(), 5, "{:?}", all[0].2);
    assert_eq!(all[0].2[3], "note: ... in 96 more instances");
    assert_eq!(all[0].2[4], "note: in instance `a` declared at t.dl:2:1");
    // Doubling at each of 30 levels would copy 2^30 instances: stopped with an error.
    let mut text = String::from(".comp C0 { .decl r(x: number) r(1). }\n");
    for i in 1..=30 {
        text += &format!(
            ".comp C{i} {{ .init a = C{} .init b = C{} }}\n",
            i - 1,
            i - 1
        );
    }
    text += ".init top = C30\n";
    let all = errs(&text);
    assert_eq!(all.len(), 1, "{all:?}");
    assert!(
        all[0]
            .0
            .starts_with("component instantiation copies or renames more than"),
        "{all:?}"
    );
    // Inheritance through a type parameter that names the component itself.
    let all = errs(".comp A<T> : T { }\n.init a = A<A>\n");
    assert!(
        all[0].0.contains("more than 100 levels deep")
            || all[0].0.starts_with("component `A` takes"),
        "{all:?}"
    );
}

#[test]
fn long_expressions_inside_components_are_copied_without_recursion() {
    let sum = vec!["x"; 20_000].join(" + ");
    let text = format!(
        ".decl e(x: number)\n.comp C {{ .decl r(x: number) r({sum}) :- e(x). }}\n.init a = C\n.init b = C\n"
    );
    let p = compile(&text);
    assert_eq!(names(&p), ["a.r", "b.r", "e"]);
}
