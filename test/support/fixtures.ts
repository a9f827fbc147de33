/**
 * A small hand-made school used by the listing tests, plus a second school for isolation.
 * Each course is chosen to sit on a filter's edge: equal instants, offsets, accents, `%`
 * and `_` in names, courses without professors, every absences / archive / signature state.
 */

export const KEY_A = "sk_test_school_a_4qX7mB2nR9tK5wE8yC3vL6pZ";
export const KEY_B = "sk_test_school_b_8hJ3dF6sG1aQ9kW2zT5xN7bM";
export const REVOKED_KEY = "sk_test_revoked_2wE9rT4yU7iO1pA5sD8fG3hJ";

type Prof = { professorId: string; coTeacher?: boolean; signed?: boolean };
interface FixtureCourse {
  id: string;
  schoolId: string;
  name: string;
  startDateTime: string;
  endDateTime: string;
  classroom?: string | null;
  creatorId?: string | null;
  trainingId?: string | null;
  archived?: boolean;
  absencesSent?: boolean;
  createdAt?: string;
  updatedAt?: string;
  groupIds?: string[];
  studentIds?: string[];
  professors?: Prof[];
  surveyTemplateIds?: string[];
}

const c = (id: string, name: string, start: string, end: string, extra: Partial<FixtureCourse> = {}): FixtureCourse => ({
  id,
  schoolId: "sch_a",
  name,
  startDateTime: start,
  endDateTime: end,
  createdAt: "2026-08-20T09:00:00.000Z",
  updatedAt: "2026-08-21T09:00:00.000Z",
  ...extra,
});

export const coursesA: FixtureCourse[] = [
  c("crs_01", "Algèbre linéaire", "2026-09-07T08:00:00Z", "2026-09-07T10:00:00Z", {
    classroom: "B204",
    creatorId: "usr_1",
    trainingId: "trn_1",
    groupIds: ["grp_2", "grp_1"],
    studentIds: ["stu_1", "stu_2"],
    professors: [
      { professorId: "prf_1", signed: true },
      { professorId: "prf_2", coTeacher: true, signed: false },
    ],
    surveyTemplateIds: ["svt_1"],
    absencesSent: true,
  }),
  // Same start as crs_01, written with an offset: order falls back to id.
  c("crs_02", "ÉCONOMIE générale", "2026-09-07T10:00:00+02:00", "2026-09-07T12:00:00+02:00", {
    classroom: "b204",
    creatorId: "usr_2",
    trainingId: "trn_2",
    groupIds: ["grp_1"],
    studentIds: ["stu_3"],
    professors: [{ professorId: "prf_1", signed: true }],
  }),
  c("crs_03", "Droit 100% pratique", "2026-09-08T08:00:00Z", "2026-09-08T09:30:00Z", {
    classroom: "A101",
    creatorId: "usr_1",
    groupIds: ["grp_3"],
    studentIds: ["stu_1"],
    archived: true,
    absencesSent: true,
    professors: [{ professorId: "prf_3", signed: false }],
  }),
  c("crs_04", "Finance_de_marché", "2026-09-09T14:00:00Z", "2026-09-09T16:00:00Z", {
    classroom: null,
    trainingId: "trn_1",
    studentIds: ["stu_4"],
  }),
  c("crs_05", "Économie du développement", "2026-09-10T08:00:00Z", "2026-09-10T10:00:00Z", {
    classroom: "B204",
    trainingId: "trn_2",
    groupIds: ["grp_2"],
    archived: true,
    professors: [
      { professorId: "prf_2", signed: true },
      { professorId: "prf_3", coTeacher: true, signed: true },
    ],
  }),
  c("crs_06", "Philosophie", "2026-09-11T18:00:00+01:00", "2026-09-11T20:00:00+01:00", {
    classroom: "C300",
    creatorId: "usr_3",
    groupIds: ["grp_1", "grp_3"],
    studentIds: ["stu_2", "stu_3", "stu_4"],
    professors: [{ professorId: "prf_4", signed: false }],
    surveyTemplateIds: ["svt_1", "svt_2"],
  }),
  c("crs_07", "Anglais", "2026-09-14T08:00:00Z", "2026-09-14T09:00:00Z", {
    creatorId: "usr_2",
    absencesSent: true,
    professors: [{ professorId: "prf_4", signed: true }],
  }),
  c("crs_08", "Histoire-Géographie", "2026-09-15T08:00:00Z", "2026-09-15T10:00:00Z", {
    classroom: "A101",
    trainingId: "trn_1",
    groupIds: ["grp_2"],
    studentIds: ["stu_1"],
    archived: true,
  }),
];

/** Courses of school B: same names and filter values as A's, never visible to A. */
const coursesB: FixtureCourse[] = [
  {
    ...c("crs_b1", "Algèbre linéaire", "2026-09-07T08:00:00Z", "2026-09-07T10:00:00Z", {
      classroom: "B204",
      creatorId: "usr_1",
      trainingId: "trn_1",
      groupIds: ["grp_1"],
      studentIds: ["stu_1"],
      professors: [{ professorId: "prf_1" }],
    }),
    schoolId: "sch_b",
  },
];

const people = (schoolId: string, prefix: string, names: [string, string][]) =>
  names.map(([firstName, lastName], i) => ({
    id: `${prefix}_${i + 1}`,
    schoolId,
    firstName,
    lastName,
    email: `${firstName}.${lastName}@example.org`.toLowerCase().normalize("NFKD").replace(/\p{M}/gu, ""),
  }));

/** The import file of the fixture (docs/operations.md § "Data import (operators)"). */
export const fixture = {
  schools: [
    { id: "sch_a", name: "Lycée Pasteur", apiKeys: [KEY_A] },
    { id: "sch_b", name: "Collège Curie", apiKeys: [KEY_B] },
    { id: "sch_revoked", name: "Revoked", apiKeys: [REVOKED_KEY] },
  ],
  trainings: [
    { id: "trn_1", schoolId: "sch_a", name: "BTS SIO" },
    { id: "trn_2", schoolId: "sch_a", name: "Bachelor Économie" },
    { id: "trn_1", schoolId: "sch_b", name: "Other school's training" },
  ],
  groups: [
    { id: "grp_1", schoolId: "sch_a", name: "SIO 1A" },
    { id: "grp_2", schoolId: "sch_a", name: "SIO 2A" },
    { id: "grp_3", schoolId: "sch_a", name: "ECO 1" },
    { id: "grp_1", schoolId: "sch_b", name: "B group" },
  ],
  students: [
    ...people("sch_a", "stu", [
      ["Léa", "Martin"],
      ["Hugo", "Bernard"],
      ["Chloé", "Martin"],
      ["Zoé", "André"],
    ]),
    ...people("sch_b", "stu", [["Other", "Student"]]),
  ],
  professors: [
    ...people("sch_a", "prf", [
      ["Karim", "Benali"],
      ["Anne", "Dupont"],
      ["Élise", "Zola"],
      ["Marc", "Abadie"],
    ]),
    ...people("sch_b", "prf", [["Other", "Professor"]]),
  ],
  surveyTemplates: [
    { id: "svt_1", schoolId: "sch_a", name: "Satisfaction" },
    { id: "svt_2", schoolId: "sch_a", name: "Évaluation" },
  ],
  courses: [...coursesA, ...coursesB],
};
