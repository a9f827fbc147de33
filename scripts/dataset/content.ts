/**
 * The content tables of the demo dataset: what a French lycée with a post-bac offer teaches,
 * to whom, and how its places and people are named.
 */
import { fold } from "../../src/lib/text";

/** Trainings of a lycée with a post-bac offer: name, group name prefix, subjects (repeated = more hours). */
export const TRAININGS: { name: string; group: string; subjects: string[] }[] = [
  {
    name: "Seconde générale et technologique",
    group: "2nde",
    subjects: [
      "Français",
      "Français",
      "Mathématiques",
      "Mathématiques",
      "Histoire-Géographie",
      "Anglais",
      "Espagnol",
      "Physique-Chimie",
      "Sciences de la vie et de la Terre",
      "Sciences économiques et sociales",
      "Éducation physique et sportive",
      "Enseignement moral et civique",
      "Sciences numériques et technologie",
    ],
  },
  {
    name: "Première générale",
    group: "1ère",
    subjects: [
      "Français",
      "Français",
      "Mathématiques",
      "Histoire-Géographie",
      "Anglais",
      "Espagnol",
      "Physique-Chimie",
      "Sciences économiques et sociales",
      "Éducation physique et sportive",
      "Humanités, littérature et philosophie",
      "Numérique et sciences informatiques",
    ],
  },
  {
    name: "Terminale générale",
    group: "Tle",
    subjects: [
      "Philosophie",
      "Philosophie",
      "Mathématiques",
      "Histoire-Géographie",
      "Anglais",
      "Allemand",
      "Physique-Chimie",
      "Sciences économiques et sociales",
      "Éducation physique et sportive",
      "Grand oral",
    ],
  },
  {
    name: "BTS Services informatiques aux organisations",
    group: "SIO",
    subjects: [
      "Culture générale et expression",
      "Anglais",
      "Mathématiques pour l'informatique",
      "Culture économique, juridique et managériale",
      "Cybersécurité des services informatiques",
      "Développement d'applications",
      "Développement d'applications",
      "Algèbre linéaire",
    ],
  },
  {
    name: "BTS Management commercial opérationnel",
    group: "MCO",
    subjects: [
      "Culture générale et expression",
      "Anglais",
      "Économie",
      "Droit",
      "Management de l'équipe commerciale",
      "Développement de la relation client",
      "Gestion opérationnelle",
    ],
  },
  {
    name: "Classe préparatoire ECG",
    group: "ECG",
    subjects: [
      "Algèbre linéaire",
      "Analyse",
      "Probabilités",
      "Économie",
      "Œuvres littéraires et culture générale",
      "Philosophie",
      "Histoire, géographie et géopolitique du monde contemporain",
      "Anglais",
      "Espagnol",
    ],
  },
];
/** Groups per training for the demo's 20 groups (2nde ×5, 1ère ×4, Tle ×4, SIO ×3, MCO ×2, ECG ×2). */
export const GROUP_SHARE = [5, 4, 4, 3, 2, 2];
/** Evening courses (18:00–20:00), outside any training. */
export const EVENING = ["Atelier théâtre", "Club robotique", "Soutien en mathématiques", "Anglais des affaires (cours du soir)", "Chorale"];
/** Suffixes of some course names. */
export const SUFFIXES = [" (TD)", " (TP)", " — devoir surveillé", " — révisions"];
/** Survey template names. */
export const SURVEYS = ["Satisfaction", "Évaluation de fin de module", "Bien-être en classe", "Retour sur les travaux pratiques", "Auto-évaluation"];
/** Namesakes of schools. */
export const PATRONS = [
  "Marie-Curie",
  "Victor-Hugo",
  "Jean-Jaurès",
  "Louise-Michel",
  "Simone-Veil",
  "Condorcet",
  "Jules-Ferry",
  "Pasteur",
  "Émile-Zola",
  "Colette",
];
/** The classroom of most physical education courses. */
export const GYM = "Gymnase";

/** `de Lyon`, `d'Aubervilliers`, `du Tampon`, `des Abymes`. */
export const of = (place: string) =>
  /^Les /.test(place)
    ? `des ${place.slice(4)}`
    : /^Le /.test(place)
      ? `du ${place.slice(3)}`
      : /^[aeiouyhâàéèêîôû]/i.test(place)
        ? `d'${place}`
        : `de ${place}`;

/** Lowercase ASCII slug for e-mail local parts: `Éloïse D'Aubigné` → `eloise-d-aubigne`. */
export function slug(text: string): string {
  return (
    fold(text)
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "") || "x"
  );
}
