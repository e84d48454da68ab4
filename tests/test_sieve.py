"""``--html sieve``: keep the part of a page about one topic, drop the rest.

The fixture recipe_noisy.html is a recipe blog page as they come: cookie banner, nav,
breadcrumbs, a long personal story (which mentions the oven, butter and minutes), ads,
a "why you'll love it" list, tips, the recipe card (ingredients, numbered instructions,
notes, nutrition), 40 related-recipe links, a newsletter box, comments that talk about
baking, a sidebar and a footer.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import textsieve
from textsieve.render import Builder
from textsieve.web.sieve import SieveResult, Topic, load_topic, presets, sieve, stem

FIXTURE = Path(__file__).parent / "fixtures" / "recipe_noisy.html"

# One distinctive phrase per direction step (in order).
STEPS = ["leaving an overhang", "swirling often", "until glossy", "In a separate bowl",
         "with a spatula", "toothpick inserted", "on a wire rack"]
INGREDIENTS = ["3 very ripe bananas, mashed (about 1 1/2 cups)",
               "1/2 cup (113 g) unsalted butter", "3/4 cup (150 g) packed light brown sugar",
               "2 large eggs, at room temperature", "1 teaspoon pure vanilla extract",
               "1 3/4 cups (220 g) all-purpose flour", "1 teaspoon baking soda",
               "1/2 teaspoon fine sea salt", "1/2 teaspoon ground cinnamon",
               "1/2 cup (60 g) chopped toasted walnuts, optional"]
# One distinctive phrase per kind of noise.
NOISE = {
    "cookie banner": "personalise content",
    "nav": "Shop My Kitchen",
    "breadcrumbs": "»",
    "byline": "87 Comments",
    "jump button": "Jump to Recipe",
    "story": "mudroom",
    "story 2": "Grandma Edith",
    "story 3": "rainy Tuesday",
    "ad": "QuickMix",
    "ad 2": "Dutch Oven Collection",
    "ad label": "Advertisement",
    "why list": "washing up",
    "tips": "speckles",
    "related": "Slow Cooker Beef Stew",
    "related 2": "Mini Cheesecakes",
    "newsletter": "weekly newsletter",
    "comments": "book club",
    "comments 2": "dairy allergy",
    "comments 3": "thermometer",
    "sidebar": "kitchen corner",
    "footer": "Privacy Policy",
    "footer 2": "Pixelmint",
    "notes": "freeze slices",
    "nutrition": "Carbohydrates",
}


def run_sieve(html: str | bytes, topic: Topic | str) -> tuple[str, str, SieveResult]:
    out = Builder()
    result = sieve(html, load_topic(topic) if isinstance(topic, str) else topic, out)
    text, markdown, _ = out.build()
    return text, markdown, result


def page() -> str:
    return FIXTURE.read_text("utf-8")


def test_directions_kept_whole_and_noise_dropped() -> None:
    text, markdown, result = run_sieve(page(), "recipe-directions")
    for step in STEPS:
        assert step in text, step
    for where, word in NOISE.items():
        assert word not in text, where
    for line in INGREDIENTS:  # the ingredients are another section
        assert line not in text
    # The heading above comes with the list; the numbering survives.
    assert markdown.startswith("### Instructions\n\n1. Preheat the oven")
    assert "\n7. Cool in the pan" in markdown
    assert len(result.regions) == 1
    assert result.confidence > 0.5


def test_ingredients_kept_whole_directions_dropped() -> None:
    text, markdown, result = run_sieve(page(), "recipe-ingredients")
    assert text.split("\n\n") == ["Ingredients", *INGREDIENTS]
    assert markdown.startswith("### Ingredients\n\n- 3 very ripe bananas")
    for step in STEPS:
        assert step not in text
    for where, word in NOISE.items():
        assert word not in text, where
    assert result.confidence > 0.5


def test_custom_topic_as_words() -> None:
    text, _, result = run_sieve(page(), "parchment toothpick whisk spatula saucepan")
    for step in STEPS:
        assert step in text
    assert "mudroom" not in text and "book club" not in text
    assert result.kept


def test_custom_topic_as_file_with_weights_phrases_and_patterns(tmp_path: Path) -> None:
    spec = tmp_path / "story.txt"
    spec.write_text("# the personal story, not the recipe\n"
                    "grandmother 2\nfarmhouse\napartment 1.5\nroommate\n"
                    "enamel bread tin 3\n/vermont|boston/ 2\n", "utf-8")
    topic = load_topic(str(spec))
    assert topic.name == "story.txt"
    assert stem("grandmother") in topic.terms and topic.patterns and topic.phrases
    text, _, result = run_sieve(page(), topic)
    assert "mudroom" in text and "Grandma Edith" in text and "rainy Tuesday" in text
    for step in STEPS:
        assert step not in text
    assert "Slow Cooker Beef Stew" not in text and "Privacy Policy" not in text
    assert result.confidence > 0.2


def test_topic_without_any_match_gives_nothing() -> None:
    text, markdown, result = run_sieve(page(), "zeppelin, quokka, cryptography")
    assert text == "" and markdown == ""
    assert result.kept == [] and result.confidence == 0.0
    assert result.blocks > 50  # the page was read, just nothing in it is on topic


def test_no_topic_words_on_an_unrelated_page() -> None:
    html = ("<html><body><nav><a href='/'>Home</a></nav><h1>The Kuiper belt</h1>"
            + "<p>Beyond Neptune lies a disc of icy bodies, remnants of the solar system's "
              "formation, among them Pluto, Eris and Arrokoth.</p>" * 20
            + "<footer>Astronomy weekly</footer></body></html>")
    text, _, result = run_sieve(html, "recipe-directions")
    assert text == "" and result.confidence == 0.0


CARD = """<h2>{name}</h2><h3>Directions</h3><ol>{steps}</ol>"""
STORY = ("<p>We drove along the coast for hours and talked about everything and nothing; "
         "the radio played old songs and the dog slept on the back seat.</p>") * 6
LINKS = "<ul>" + "".join(f"<li><a href='/r/{i}'>Recipe number {i}</a></li>"
                         for i in range(30)) + "</ul>"


def _two_recipes() -> str:
    short = ["Whisk the dressing in a small bowl until smooth.",
             "Toss the salad leaves with the dressing and serve at once."]
    long_ = ["Preheat the oven to 200°C and line a baking sheet with foil.",
             "Toss the potatoes with oil and salt, then spread them on the baking sheet.",
             "Roast for 25 minutes, then turn them and roast 15 minutes more until golden.",
             "Meanwhile melt the butter in a pan over low heat and stir in the rosemary.",
             "Pour the rosemary butter over the potatoes, toss and serve hot."]
    cards = [CARD.format(name=n, steps="".join(f"<li>{s}</li>" for s in st))
             for n, st in (("Green salad", short), ("Roast potatoes", long_))]
    return f"<html><body>{STORY}{cards[0]}{STORY}{LINKS}{STORY}{cards[1]}{STORY}</body></html>"


def test_two_regions_best_one_by_default_both_when_asked(tmp_path: Path) -> None:
    html = _two_recipes()
    text, markdown, result = run_sieve(html, "recipe-directions")
    assert "Roast for 25 minutes" in text and "rosemary butter over" in text
    assert "Whisk the dressing" not in text  # the weaker recipe is a second region
    assert "coast" not in text and "Recipe number" not in text
    # The region starts at its "Directions" heading, which brings the recipe name above.
    assert markdown.startswith("## Roast potatoes\n\n### Directions\n\n1. Preheat")
    assert len(result.regions) == 1

    topic = load_topic("recipe-directions")
    topic.max_regions = 2
    text, _, result = run_sieve(html, topic)
    assert len(result.regions) == 2
    assert text.index("Whisk the dressing") < text.index("Roast for 25 minutes")
    assert "coast" not in text and "Recipe number" not in text

    spec = tmp_path / "both.txt"
    spec.write_text("@regions all\n" + (Path(textsieve.__file__).parent / "web" / "presets"
                                         / "recipe-directions.txt").read_text("utf-8"))
    assert load_topic(str(spec)).max_regions > 2
    assert len(run_sieve(html, str(spec))[2].regions) == 2


def test_a_list_is_never_cut_in_the_middle() -> None:
    items = ["2 cups flour", "1 tablespoon sugar", "2 teaspoons salt", "3 tbsp butter",
             "a handful of something nice", "whatever the neighbours bring",
             "good company", "a sunny afternoon on the porch"]
    html = ("<html><body>" + STORY + "<h3>Ingredients</h3><ul>"
            + "".join(f"<li>{i}</li>" for i in items) + "</ul>" + STORY + "</body></html>")
    text, _, _ = run_sieve(html, "recipe-ingredients")
    assert text.split("\n\n") == ["Ingredients", *items]


def test_stemmer_brings_word_forms_together() -> None:
    groups = [["bake", "baked", "baking", "bakes"], ["stir", "stirs", "stirring", "stirred"],
              ["egg", "eggs"], ["berry", "berries"], ["chop", "chopped", "chopping"],
              ["minute", "minutes"], ["dish", "dishes"], ["tomato", "tomatoes"],
              ["add", "added", "adding", "adds"], ["fry", "fried", "fries"],
              ["whisk", "whisked", "whisking"], ["ounce", "ounces"], ["cup", "cups"]]
    for forms in groups:
        assert len({stem(f) for f in forms}) == 1, forms
    assert stem("glass") != stem("gla") and stem("boss") == "boss"
    assert stem("42") == "42" and stem("größe") == "größe"


def test_load_topic_forms_and_errors(tmp_path: Path) -> None:
    assert {"recipe-directions", "recipe-ingredients"} <= set(presets())
    words = load_topic("oven bake")
    assert set(words.terms) == {stem("oven"), stem("bake")} and not words.phrases
    phrases = load_topic("preheat the oven, wire rack")
    assert not phrases.terms and len(phrases.phrases) == 2
    for bad in ("", "  ", ", ,"):
        with pytest.raises(ValueError):
            load_topic(bad)
    f = tmp_path / "t.txt"
    f.write_text("@colour blue\n")
    with pytest.raises(ValueError, match="unknown directive"):
        load_topic(str(f))
    f.write_text("/[unclosed/ 2\n")
    with pytest.raises(ValueError, match="bad pattern"):
        load_topic(str(f))


def test_one_megabyte_page_is_fast() -> None:
    """The sieve is linear in the page: smoothing touches only blocks with topic words."""
    html = page()
    body_start = html.index('<div class="entry-content">')
    card_start = html.index('<div id="recipe"')
    card_end = html.index('<div class="related-recipes">')
    filler = html[body_start:card_start] + html[card_end:html.index("</article>")]
    repeats = 1_000_000 // (2 * len(filler)) + 1
    big = (html[:body_start] + filler * repeats + html[card_start:card_end]
           + filler * repeats + html[html.index("</article>"):])
    assert len(big) > 1_000_000
    t0 = time.perf_counter()
    text, _, result = run_sieve(big.encode("utf-8"), "recipe-directions")
    elapsed = time.perf_counter() - t0
    print(f"\nsieve of a {len(big) / 1e6:.2f} MB page ({result.blocks} blocks): "
          f"{elapsed:.3f} s")
    for step in STEPS:
        assert step in text
    assert "mudroom" not in text and "book club" not in text


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "textsieve", *args], capture_output=True,
                          text=True, timeout=120, check=False)


def test_cli_sieve_with_a_preset() -> None:
    r = _cli("extract", "--html", "sieve", "--topic", "recipe-directions", str(FIXTURE))
    assert r.returncode == 0, r.stderr
    for step in STEPS:
        assert step in r.stdout
    for where, word in NOISE.items():
        assert word not in r.stdout, where
    r = _cli("extract", "-f", "json", "--topic", "recipe-ingredients", str(FIXTURE))
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    extra = rec["metadata"]["extra"]
    assert extra["sieve_topic"] == "recipe-ingredients"
    assert extra["sieve_blocks"] == 1 + len(INGREDIENTS)
    assert 0.5 < extra["sieve_confidence"] <= 1
    assert rec["title"].startswith("Brown Butter Banana Bread")  # head metadata still read
    assert "toothpick" not in rec["text"]


def test_cli_sieve_topic_file_relative_path(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("toothpick 2\nparchment\n")
    r = subprocess.run([sys.executable, "-m", "textsieve", "extract", "--html", "sieve",
                        "--topic", "t.txt", str(FIXTURE)], capture_output=True, text=True,
                       timeout=120, check=False, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "toothpick inserted" in r.stdout and "mudroom" not in r.stdout


@pytest.mark.parametrize("args", [["--html", "sieve"], ["--html", "full", "--topic", "x"],
                                  ["--topic", " , "]])
def test_cli_sieve_usage_errors(args: list[str]) -> None:
    r = _cli("extract", *args, str(FIXTURE))
    assert r.returncode == 2
    assert "topic" in r.stderr


BIKE = {
    "en": ("Fitting a new chain", "What you need", "Steps",
           ["1 chain tool", "2 × 5 mm quick links", "15 ml chain oil", "1 old rag",
            "1 pair of gloves"],
           ["Shift onto the smallest sprocket at the back and the small ring at the front.",
            "Break the old chain with the chain tool and pull it off the bike.",
            "Thread the new chain through the derailleur and join it with the quick link.",
            "Turn the cranks backwards and put one drop of oil on every roller."],
           "I rode across the hills last summer and my old chain creaked on every climb, "
           "so on a rainy Sunday I finally changed it in the garage."),
    "de": ("Eine neue Kette montieren", "Das brauchst du", "Schritte",
           ["1 Kettennieter", "2 × 5 mm Kettenschlösser", "15 ml Kettenöl", "1 alter Lappen",
            "1 Paar Handschuhe"],
           ["Schalte hinten auf das kleinste Ritzel und vorne auf das kleine Kettenblatt.",
            "Öffne die alte Kette mit dem Kettennieter und nimm sie vom Rad.",
            "Fädle die neue Kette durch das Schaltwerk und schließe sie mit dem Kettenschloss.",
            "Drehe die Kurbel rückwärts und gib auf jede Rolle einen Tropfen Öl."],
           "Letzten Sommer bin ich über die Hügel gefahren und die alte Kette hat bei "
           "jedem Anstieg geknarzt, also habe ich sie an einem Regensonntag gewechselt."),
}
BIKE_TOPICS = {
    "bike-parts.txt": "# what a repair needs\n@shape items\nparts 2\nyou need 2\ntool\nchain\n"
                      "oil\nrag\nlink\n",
    "bike-steps.txt": "# how the repair is done\n@shape steps\n@near bike-parts\nsteps 2\nshift\n"
                      "chain\nderailleur\nsprocket\ncranks\ntool\n",
    "bike-parts.de.txt": "@shape items\nbrauchst 2\nkettennieter\nkettenöl\nlappen\n"
                         "kettenschloss\n",
    "bike-steps.de.txt": "@shape steps\n@near bike-parts\nschritte 2\nschalte\nkette\nritzel\n"
                         "schaltwerk\nkurbel\n",
}


def _bike_page(lang: str) -> str:
    title, need, steps_head, parts, steps, story = BIKE[lang]
    comments = "".join(f"<li>{n}: {c}</li>" for n, c in
                       (("Ann", story[:60] + " Thanks, this helped!"), ("Bo", steps[0])))
    return (f"<!doctype html><html lang='{lang}'><head><title>{title}</title></head><body>"
            "<nav><a href='/'>Home</a> <a href='/tips'>Tips</a></nav>"
            f"<article><h1>{title}</h1><p>{story}</p><p>{story}</p>"
            f"<h2>{need}</h2><ul>{''.join(f'<li>{x}</li>' for x in parts)}</ul>"
            f"<h2>{steps_head}</h2><ol>{''.join(f'<li>{x}</li>' for x in steps)}</ol>"
            f"<p>{story}</p></article>"
            f"<section class='comments'><ol>{comments}</ol></section>"
            "<footer>© Bike blog</footer></body></html>")


@pytest.mark.parametrize("lang", ["en", "de"])
def test_a_users_own_shaped_topic_in_two_languages(tmp_path: Path, lang: str) -> None:
    """Not a recipe: a user's topic files for a bike repair's parts and steps, with
    @shape and @near, and German variants beside them (FILE.de.txt), through the CLI."""
    for name, text in BIKE_TOPICS.items():
        (tmp_path / name).write_text(text, "utf-8")
    page = tmp_path / f"chain-{lang}.html"
    page.write_text(_bike_page(lang), "utf-8")
    _, _, _, parts, steps, story = BIKE[lang]
    r = _cli("extract", "-f", "json", "--topic", str(tmp_path / "bike-parts.txt"), str(page))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    lines = [x for x in doc["text"].split("\n\n") if x not in (BIKE[lang][1],)]
    assert lines == parts
    assert doc["metadata"]["extra"]["sieve_language"] == lang
    german = load_topic(str(tmp_path / "bike-parts.txt"), lang).stem("kettennieter")
    assert (german in load_topic(str(tmp_path / "bike-parts.txt"), lang).terms) == (lang == "de")
    r = _cli("extract", "--html", "sieve", "--topic", str(tmp_path / "bike-steps.txt"),
             str(page))
    assert r.returncode == 0, r.stderr
    for step in steps:
        assert step in r.stdout
    assert story[:30] not in r.stdout and parts[0] not in r.stdout
    assert "Thanks, this helped" not in r.stdout


_POST = """<html lang="en"><body><article><h1>Lemon loaf</h1>
<div class="ingredients"><h2>Ingredients</h2><ul><li>200 g flour</li><li>150 g sugar</li>
<li>2 eggs</li><li>1 lemon, zested</li><li>100 g butter, melted</li></ul></div>
<div class="post-body"><p><strong>Preparation.</strong></p>
{steps}
<p>{tail}</p></div>
<div class="related"><h3>More cakes</h3><p><a href="/a">Apple cake</a></p></div>
</article></body></html>"""
_STEPS = ["Heat the oven to 180 °C and butter a loaf tin.",
          "Whisk the eggs and the sugar until pale, then fold in the flour and the zest.",
          "Stir in the melted butter, pour into the tin and bake for 45 minutes."]


@pytest.mark.parametrize("as_list", [False, True])
def test_a_posts_closing_line_goes_with_paragraph_steps_not_with_a_list(
        tmp_path: Path, as_list: bool) -> None:
    """Steps written as a post's paragraphs run to the end of the post's body when what
    is left is a short closing (a scraper of such a post reads it, and the author's last
    word belongs to the method); a list's steps end with the list."""
    steps = ("<ol>" + "".join(f"<li>{s}</li>" for s in _STEPS) + "</ol>" if as_list
             else "".join(f"<p>{s}</p>" for s in _STEPS))
    path = tmp_path / "loaf.html"
    path.write_text(_POST.format(steps=steps, tail="Thanks for reading. Greetings, Anna."),
                    encoding="utf-8")
    r = _cli("extract", "--html", "sieve", "--topic", "recipe-directions", str(path))
    assert r.returncode == 0, r.stderr
    assert "bake for 45 minutes" in r.stdout and "Heat the oven" in r.stdout, r.stdout
    assert ("Greetings, Anna." in r.stdout) is not as_list, r.stdout
    assert "Apple cake" not in r.stdout
