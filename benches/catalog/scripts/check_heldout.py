#!/usr/bin/env python3
"""Check a labelled set of tool-search requests against the catalog.

Usage (from the repository root, python3 and its standard library only):

    python3 benches/catalog/scripts/check_heldout.py                        # data/heldout2.txt
    python3 benches/catalog/scripts/check_heldout.py path/to/set.txt        # another set
    python3 benches/catalog/scripts/check_heldout.py --strict               # also count parameter descriptions
    python3 benches/catalog/scripts/check_heldout.py --verbose              # print the words each request shares

The set has the format of data/queries.txt (`request => server__tool, ...`,
`#` comment lines and blank lines skipped, as `parse_queries` in src/lib.rs
reads it). Its requests may be split into sections by the exact header
lines `# == literal ==`, `# == paraphrase ==` and `# == no product ==`.

It checks that:
- every line parses and every answer is a tool of data/tools.txt;
- no request appears twice, nor (ignoring case, punctuation and spacing) in
  data/queries.txt or data/heldout.txt, nor (for another set than
  data/heldout2.txt) in data/heldout2.txt, whose text is never printed;
- a literal request shares at least one content word with the name,
  description or parameter names of one of its answers;
- a paraphrase request shares no content word with the name (server and
  tool), description or parameter names of any of its answers. Words are
  compared lowercased, stop words left out, after stripping common
  inflections (`staged` and `staging` are the same word), and a word that
  begins another of five letters or more counts as shared (`creat`,
  `creation`);
- a no-product request names no product, vendor or server.

It prints the number of requests per section and of servers covered (with
the servers answering fewer than three requests), then every violation.
The exit status is 1 if there is any.
"""

import collections
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")

SECTIONS = {
    "# == literal ==": "literal",
    "# == paraphrase ==": "paraphrase",
    "# == no product ==": "no product",
}
ORDER = ["literal", "paraphrase", "no product"]

STOP = set(
    """
    a an the and or but nor so yet if then than as at by for from in into of off on onto out over
    to up down with within without about above below after before again once under until upon via
    per be am is are was were been being do does did doing done have has had having can could
    will would shall should may might must i me my mine myself we us our ours ourselves you your
    yours yourself it its itself they them their theirs he him his she her hers this that these
    those there here what which who whom whose when where why how all any both each few more most
    other some such no not only own same too very just also now please s t don isn aren wasn
    what's it's that's let's i'm i've i'd we're we've they're you're can't don't doesn't won't
    isn't aren't didn't haven't hasn't there's here's who's where's how's let lets
    """.split()
)

# Names of products, vendors and servers a no-product request must not use.
PRODUCTS = set(
    """
    github gitlab git slack discord postgres postgresql psql sqlite mongo mongodb redis
    elasticsearch elastic kibana jira confluence atlassian linear asana trello todoist notion
    google gdrive gdocs gsheets gmail gcal gcalendar outlook microsoft office365 calendly zoom
    stripe paypal shopify hubspot salesforce sfdc zendesk intercom twilio sendgrid mailchimp
    kubernetes k8s kubectl helm docker compose aws amazon s3 ec2 lambda dynamodb dynamo sqs
    cloudwatch cloudformation iam gcp bigquery gcs azure cosmos cloudflare workers r2 d1
    vercel netlify terraform hashicorp sentry seer datadog grafana prometheus promql loki
    logql pagerduty statuspage playwright puppeteer chrome chromium firecrawl brave exa arxiv
    wikipedia maps spotify youtube twitter tweet tweets x reddit subreddit hackernews hn
    context7 figma airtable supabase dropbox box onedrive sharepoint whatsapp linkedin copilot
    dependabot jql soql apex kql cql gist gists algolia pg_stat_statements
    """.split()
)
PRODUCT_PHRASES = ["hacker news", "google drive", "google docs", "google sheets", "key vault"]


def stem(word):
    for suffix in ("ational", "ation", "ings", "ing", "ies", "ied", "ers", "er", "es", "ed", "ly", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def words(text):
    """Lowercase words of a text, camelCase and snake_case split apart."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return [w for w in re.findall(r"[a-z0-9']+", text.lower().replace("_", " ")) if w.strip("'")]


def content(text):
    out = set()
    for w in words(text):
        w = w.strip("'")
        if w.endswith("'s"):
            w = w[:-2]
        if w and w not in STOP and not w.isdigit() and len(w) > 1:
            out.add(w)
    return out


def shared(request_words, tool_words):
    """Pairs (request word, tool word) that count as the same word."""
    pairs = []
    stems = {w: stem(w) for w in tool_words}
    for r in sorted(request_words):
        rs = stem(r)
        for t in sorted(tool_words):
            ts = stems[t]
            same = rs == ts or r == t
            if not same and min(len(rs), len(ts)) >= 5:
                same = rs.startswith(ts) or ts.startswith(rs)
            if same:
                pairs.append((r, t))
    return pairs


def parse_tools(path):
    tools = {}
    server = None
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("@server"):
            server = line.split()[1]
            continue
        parts = [p.strip() for p in line.split("|")]
        name, description = parts[0], parts[1]
        params = parts[2] if len(parts) > 2 else ""
        names, descs = [], []
        for p in params.split(";"):
            p = p.strip()
            if not p:
                continue
            pname, _, rest = p.partition(":")
            _, _, pdesc = rest.partition(":")
            names.append(pname.rstrip("?"))
            descs.append(pdesc)
        tools[f"{server}__{name}"] = {
            "server": server,
            "name": name,
            "description": description,
            "params": names,
            "param_descriptions": descs,
        }
    return tools


def parse_set(path):
    """(line number, section, request, answers) of each request; parse errors."""
    out, errors = [], []
    section = None
    for i, raw in enumerate(open(path, encoding="utf-8"), 1):
        line = raw.strip()
        if line in SECTIONS:
            section = SECTIONS[line]
            continue
        if not line or line.startswith("#"):
            continue
        if "=>" not in line:
            errors.append(f"line {i}: expected `request => tool, tool`")
            continue
        request, answers = line.split("=>", 1)
        answers = [a.strip() for a in answers.split(",") if a.strip()]
        if not request.strip() or not answers:
            errors.append(f"line {i}: empty request or no answer")
            continue
        out.append((i, section, request.strip(), answers))
    return out, errors


def normal(request):
    return " ".join(re.findall(r"[a-z0-9]+", request.lower()))


def tool_words(tool, strict):
    text = " ".join([tool["server"], tool["name"], tool["description"], " ".join(tool["params"])])
    if strict:
        text += " " + " ".join(tool["param_descriptions"])
    return content(text)


def main(argv):
    strict = "--strict" in argv
    verbose = "--verbose" in argv
    paths = [a for a in argv if not a.startswith("--")]
    target = paths[0] if paths else os.path.join(DATA, "heldout2.txt")
    tools = parse_tools(os.path.join(DATA, "tools.txt"))
    rows, problems = parse_set(target)

    earlier = {}
    for name in ("queries.txt", "heldout.txt"):
        for _, _, request, _ in parse_set(os.path.join(DATA, name))[0]:
            earlier[normal(request)] = name
    # Held-out set 2 must stay unseen: compare against it, never print its text.
    hidden = set()
    heldout2 = os.path.join(DATA, "heldout2.txt")
    if os.path.exists(heldout2) and os.path.realpath(target) != os.path.realpath(heldout2):
        hidden = {normal(request) for _, _, request, _ in parse_set(heldout2)[0]}

    seen = {}
    per_section = collections.Counter()
    per_server = collections.Counter()
    for line, section, request, answers in rows:
        where = f"line {line}"
        per_section[section or "(no section)"] += 1
        if section is None:
            problems.append(f"{where}: request before any section header")
        key = normal(request)
        if key in seen:
            problems.append(f"{where}: same request as line {seen[key]}: {request}")
        seen.setdefault(key, line)
        if key in earlier:
            problems.append(f"{where}: repeats a request of {earlier[key]}: {request}")
        if key in hidden:
            problems.append(f"{where}: repeats a request of another labelled set")
        unknown = [a for a in answers if a not in tools]
        for a in unknown:
            problems.append(f"{where}: no tool {a}")
        if len(set(answers)) != len(answers):
            problems.append(f"{where}: an answer is listed twice")
        known = [a for a in answers if a in tools]
        for server in {tools[a]["server"] for a in known}:
            per_server[server] += 1
        req = content(request)
        if section == "literal":
            if not any(shared(req, tool_words(tools[a], False)) for a in known):
                problems.append(f"{where}: literal, but shares no content word with an answer: {request}")
        elif section == "paraphrase":
            for a in known:
                pairs = shared(req, tool_words(tools[a], strict))
                if pairs:
                    said = ", ".join(f"{r}~{t}" if r != t else r for r, t in pairs)
                    problems.append(f"{where}: paraphrase shares [{said}] with {a}: {request}")
        elif section == "no product":
            low = request.lower()
            named = sorted({w for w in words(low) if w.strip("'").removesuffix("'s") in PRODUCTS})
            named += [p for p in PRODUCT_PHRASES if p in low]
            if named:
                problems.append(f"{where}: no product, but names {', '.join(named)}: {request}")
        if verbose:
            best = set()
            for a in known:
                best |= {r for r, _ in shared(req, tool_words(tools[a], strict))}
            print(f"{line:4} {section:10} shared={sorted(best)} {request}")

    total = sum(per_section.values())
    print(f"{os.path.relpath(target)}: {total} requests")
    for s in ORDER + ["(no section)"]:
        if per_section[s]:
            print(f"  {s:12} {per_section[s]:4}  ({per_section[s] / max(total, 1):.0%})")
    servers = sorted({t["server"] for t in tools.values()})
    covered = [s for s in servers if per_server[s]]
    print(f"  servers covered: {len(covered)} of {len(servers)}")
    thin = [f"{s} ({per_server[s]})" for s in servers if per_server[s] < 3]
    if thin:
        print(f"  servers with fewer than 3 requests: {', '.join(thin)}")
    if per_section["paraphrase"] * 3 < total:
        problems.append("fewer than a third of the requests are paraphrases")
    if per_section["no product"] * 5 < total:
        problems.append("fewer than a fifth of the requests name no product")
    seen_order = [s for _, s, _, _ in rows if s]
    if seen_order != sorted(seen_order, key=ORDER.index):
        problems.append("sections are not in the order literal, paraphrase, no product")
    for p in problems:
        print(p)
    print("clean" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
