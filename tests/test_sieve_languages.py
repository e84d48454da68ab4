"""``--html sieve`` on recipe pages in English, German, French and Spanish.

Each page is built like the recipe blogs of its language: navigation, a personal story
that mentions the oven and the butter, the recipe card (ingredients, numbered steps), a
"rate this recipe" box, reader comments that talk about baking, and a footer. Every page
comes twice: with the schema.org ``Recipe`` JSON-LD most recipe plugins write, and
without (the density sieve must then find the card by the page's language).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

import textsieve
from textsieve.options import Options


@dataclass
class Lang:
    code: str
    title: str
    nav: list[str]
    story: list[str]
    ing_head: str
    ingredients: list[str]
    steps_head: str
    steps: list[str]
    rate: str
    comments: list[str]
    footer: str


EN = Lang(
    "en", "Grandma's apple cake",
    ["Home", "Recipes", "Baking", "About me", "Contact"],
    ["Every autumn my grandmother baked this cake when the apples from the old tree in "
     "her garden were ripe, and the whole house smelled of butter and cinnamon.",
     "I have changed very little: a bit less sugar, and a springform pan instead of her "
     "dented tin. It is the cake my children ask for on every birthday."],
    "Ingredients",
    ["4 tart apples, peeled and sliced", "200 g all-purpose flour",
     "125 g butter, softened", "120 g sugar", "3 eggs", "2 teaspoons baking powder",
     "1 pinch of salt", "1 teaspoon ground cinnamon"],
    "Instructions",
    ["Preheat the oven to 180°C and grease a 26 cm springform pan.",
     "Beat the butter and sugar until fluffy, then add the eggs one at a time.",
     "Mix the flour with the baking powder and salt and stir it into the batter.",
     "Spread the batter in the pan and press the apple slices into it.",
     "Bake for 45 minutes until golden, then let cool in the pan for 15 minutes."],
    "Rate this recipe",
    ["I baked this yesterday with pears instead of apples and it was wonderful!",
     "Can I use a 24 cm pan? Mine is smaller, so should I bake it longer?"],
    "All rights reserved. Privacy policy. Imprint.")

DE = Lang(
    "de", "Omas Apfelkuchen",
    ["Startseite", "Rezepte", "Backen", "Über mich", "Kontakt"],
    ["Jeden Herbst hat meine Oma diesen Kuchen gebacken, wenn die Äpfel vom alten Baum "
     "in ihrem Garten reif waren, und das ganze Haus roch nach Butter und Zimt.",
     "Ich habe nur wenig geändert: etwas weniger Zucker und eine Springform statt ihrer "
     "verbeulten Form. Meine Kinder wünschen sich ihn zu jedem Geburtstag."],
    "Zutaten",
    ["4 säuerliche Äpfel, geschält und in Spalten", "200 g Mehl", "125 g weiche Butter",
     "120 g Zucker", "3 Eier", "2 TL Backpulver", "1 Prise Salz", "1 TL Zimt"],
    "Zubereitung",
    ["Den Backofen auf 180 °C Ober- und Unterhitze vorheizen und eine Springform "
     "(26 cm) fetten.",
     "Butter und Zucker schaumig schlagen, dann die Eier einzeln unterrühren.",
     "Mehl mit Backpulver und Salz mischen und unter den Teig rühren.",
     "Den Teig in die Form streichen und die Apfelspalten hineindrücken.",
     "Etwa 45 Minuten goldbraun backen und 15 Minuten in der Form abkühlen lassen."],
    "Rezept bewerten",
    ["Ich habe ihn gestern mit Birnen statt Äpfeln gebacken, einfach wunderbar!",
     "Geht auch eine 24er Form? Meine ist kleiner, muss ich dann länger backen?"],
    "Alle Rechte vorbehalten. Datenschutz. Impressum.")

FR = Lang(
    "fr", "Le gâteau aux pommes de ma grand-mère",
    ["Accueil", "Recettes", "Pâtisserie", "À propos", "Contact"],
    ["Chaque automne, ma grand-mère préparait ce gâteau quand les pommes du vieil arbre "
     "de son jardin étaient mûres, et toute la maison sentait le beurre et la cannelle.",
     "J'ai très peu changé la recette : un peu moins de sucre et un moule à charnière "
     "au lieu de son vieux moule cabossé. Mes enfants le réclament à chaque anniversaire."],
    "Ingrédients",
    ["4 pommes acidulées, épluchées et coupées en quartiers", "200 g de farine",
     "125 g de beurre mou", "120 g de sucre", "3 œufs", "2 cuillères à café de levure chimique",
     "1 pincée de sel", "1 cuillère à café de cannelle"],
    "Préparation",
    ["Préchauffez le four à 180 °C et beurrez un moule à charnière de 26 cm.",
     "Fouettez le beurre et le sucre jusqu'à ce que le mélange blanchisse, puis ajoutez "
     "les œufs un par un.",
     "Mélangez la farine avec la levure et le sel, puis incorporez-la à la pâte.",
     "Versez la pâte dans le moule et enfoncez-y les quartiers de pommes.",
     "Enfournez pour 45 minutes jusqu'à ce que le gâteau soit doré, puis laissez "
     "refroidir 15 minutes dans le moule."],
    "Notez cette recette",
    ["Je l'ai fait hier avec des poires à la place des pommes, un délice !",
     "Est-ce que je peux utiliser un moule de 24 cm ? Faut-il le cuire plus longtemps ?"],
    "Tous droits réservés. Politique de confidentialité. Mentions légales.")

ES = Lang(
    "es", "La tarta de manzana de mi abuela",
    ["Inicio", "Recetas", "Repostería", "Sobre mí", "Contacto"],
    ["Cada otoño mi abuela hacía esta tarta cuando maduraban las manzanas del viejo árbol "
     "de su jardín, y toda la casa olía a mantequilla y canela.",
     "He cambiado muy poco: un poco menos de azúcar y un molde desmontable en lugar de su "
     "viejo molde abollado. Mis hijos la piden en cada cumpleaños."],
    "Ingredientes",
    ["4 manzanas ácidas, peladas y cortadas en gajos", "200 g de harina",
     "125 g de mantequilla blanda", "120 g de azúcar", "3 huevos",
     "2 cucharaditas de levadura química", "1 pizca de sal", "1 cucharadita de canela"],
    "Preparación",
    ["Precalienta el horno a 180 °C y engrasa un molde desmontable de 26 cm.",
     "Bate la mantequilla con el azúcar hasta que esté cremosa y añade los huevos de uno "
     "en uno.",
     "Mezcla la harina con la levadura y la sal e incorpórala a la masa.",
     "Vierte la masa en el molde y hunde en ella los gajos de manzana.",
     "Hornea durante 45 minutos hasta que esté dorada y deja enfriar 15 minutos en el "
     "molde."],
    "Valora esta receta",
    ["¡La hice ayer con peras en lugar de manzanas y quedó riquísima!",
     "¿Puedo usar un molde de 24 cm? El mío es más pequeño, ¿hay que hornearla más?"],
    "Todos los derechos reservados. Política de privacidad. Aviso legal.")

LANGS = [EN, DE, FR, ES]


def recipe_page(lang: Lang, json_ld: bool, declare_language: bool = True) -> str:
    """A recipe blog page; with ``json_ld`` its card is a plugin's (checkbox spans, the
    amounts apart from the names) and the page carries the plugin's Recipe JSON-LD."""
    data = {"@context": "https://schema.org", "@graph": [
        {"@type": "WebPage", "name": lang.title},
        {"@type": "Recipe", "name": lang.title, "recipeIngredient": lang.ingredients,
         "recipeInstructions": [{"@type": "HowToStep", "text": s} for s in lang.steps]}]}
    head = (f'<script type="application/ld+json">{json.dumps(data, ensure_ascii=False)}'
            "</script>" if json_ld else "")
    if json_ld:
        items = "".join(
            f'<li class="wprm-ingredient"><span class="check">&#9744;</span>'
            f'<span class="amount">{i.split(" ", 1)[0]}</span> '
            f'<span class="name">{i.split(" ", 1)[1]}</span></li>' for i in lang.ingredients)
    else:
        items = "".join(f"<li>{i}</li>" for i in lang.ingredients)
    steps = "".join(f"<li>{s}</li>" for s in lang.steps)
    nav = "".join(f'<li><a href="/{n.lower()}">{n}</a></li>' for n in lang.nav)
    story = "".join(f"<p>{p}</p>" for p in lang.story)
    comments = "".join(f'<li class="comment"><p>{c}</p></li>' for c in lang.comments)
    html_lang = f' lang="{lang.code}"' if declare_language else ""
    return f"""<!DOCTYPE html>
<html{html_lang}><head><meta charset="utf-8"><title>{lang.title}</title>{head}</head>
<body><header><nav><ul>{nav}</ul></nav></header>
<main><article><h1>{lang.title}</h1>{story}
<div class="recipe-card"><h2>{lang.title}</h2>
<h3>{lang.ing_head}</h3><ul class="ingredients">{items}</ul>
<h3>{lang.steps_head}</h3><ol class="instructions">{steps}</ol>
<div class="rating"><h4>{lang.rate}</h4><span>★★★★★</span></div></div>
</article>
<section class="comments"><h3>2</h3><ol>{comments}</ol></section></main>
<footer><p>{lang.footer}</p></footer></body></html>"""


def sieve(tmp_path: Path, html: str, topic: str) -> textsieve.Document:
    path = tmp_path / "recipe.html"
    path.write_text(html, "utf-8")
    doc = textsieve.extract(path, options=Options(html="sieve", topic=topic))
    assert doc.status != "error", doc.error
    return doc


@pytest.mark.parametrize("json_ld", [True, False], ids=["json-ld", "html-only"])
@pytest.mark.parametrize("lang", LANGS, ids=[x.code for x in LANGS])
def test_ingredients_in_four_languages(tmp_path: Path, lang: Lang, json_ld: bool) -> None:
    doc = sieve(tmp_path, recipe_page(lang, json_ld), "recipe-ingredients")
    lines = [x for x in doc.text.split("\n\n") if x not in (lang.ing_head, lang.title)]
    assert lines == lang.ingredients  # each once, whole, in order, nothing else
    assert doc.metadata.extra["sieve_source"] == ("recipe" if json_ld else "blocks")
    assert doc.metadata.extra["sieve_found"] is True


@pytest.mark.parametrize("json_ld", [True, False], ids=["json-ld", "html-only"])
@pytest.mark.parametrize("lang", LANGS, ids=[x.code for x in LANGS])
def test_directions_in_four_languages(tmp_path: Path, lang: Lang, json_ld: bool) -> None:
    doc = sieve(tmp_path, recipe_page(lang, json_ld), "recipe-directions")
    for step in lang.steps:
        assert step in doc.text
    for noise in (lang.rate, lang.comments[0], lang.story[0][:40], lang.ingredients[1],
                  lang.footer[:20], lang.nav[2]):
        assert noise not in doc.text
    assert doc.markdown.count("1. ") == 1  # one numbered list, not the list twice


@pytest.mark.parametrize("lang", LANGS[1:], ids=[x.code for x in LANGS[1:]])
def test_language_guessed_when_not_declared(tmp_path: Path, lang: Lang) -> None:
    doc = sieve(tmp_path, recipe_page(lang, False, declare_language=False),
                "recipe-ingredients")
    assert doc.metadata.extra["sieve_language"] == lang.code
    assert [x for x in doc.text.split("\n\n")
            if x not in (lang.ing_head, lang.title)] == lang.ingredients


def test_no_block_about_the_topic_is_reported(tmp_path: Path) -> None:
    """A page that is not a recipe but mentions a minute or a gram here and there gets
    "no block about this topic", not its least unrelated paragraph."""
    paras = [
        "Der neue Kombi fährt sich ruhig und leise; nach 30 Minuten auf der Autobahn "
        "zeigt der Bordcomputer einen Verbrauch von 6,1 Litern.",
        "Der Kofferraum fasst 510 Liter, mit umgeklappter Rückbank sind es 1.620 Liter.",
        "Die Sitze sind bequem, nur die Bedienung des Bildschirms lenkt beim Fahren ab.",
        "Im Test kostete das Modell mit Automatik und Navigation 41.900 Euro.",
    ] * 3
    html = ("<html lang='de'><head><title>Test: der neue Kombi</title></head><body>"
            "<nav><a href='/'>Start</a> <a href='/tests'>Tests</a></nav><h1>Test</h1>"
            + "".join(f"<p>{p}</p>" for p in paras) + "</body></html>")
    for topic in ("recipe-ingredients", "recipe-directions"):
        doc = sieve(tmp_path, html, topic)
        assert doc.text == ""
        assert doc.metadata.extra["sieve_found"] is False
        assert any("no block about this topic" in w for w in doc.warnings)
