"""Names checked where they are stored (slugs, run names, question ids), room
for long version file paths, and team review: roles per project, and per run
the overlap, blind labeling, assigned reviewers and adjudications of
disputed claims.

Every member gets a Membership with a role.
Existing members become leads: before roles, every member could import,
snapshot and label, which is what a lead may do.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import labeling.names


def members_become_leads(apps, schema_editor):
    Project = apps.get_model("labeling", "Project")
    Membership = apps.get_model("labeling", "Membership")
    through = Project.members.through
    Membership.objects.bulk_create([
        Membership(project_id=row.project_id, reviewer_id=row.reviewer_id, role="lead")
        for row in through.objects.all()
    ])


def memberships_back(apps, schema_editor):
    Project = apps.get_model("labeling", "Project")
    Membership = apps.get_model("labeling", "Membership")
    through = Project.members.through
    through.objects.bulk_create([
        through(project_id=m.project_id, reviewer_id=m.reviewer_id) for m in Membership.objects.all()
    ])


class Migration(migrations.Migration):

    dependencies = [
        ('labeling', '0005_default_ordering_by_columns'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name='labeltableversion',
            name='file',
            field=models.FileField(max_length=255, upload_to='label_tables/'),
        ),
        migrations.AlterField(
            model_name='project',
            name='slug',
            field=models.SlugField(max_length=64, unique=True, validators=[labeling.names.validate_project_slug]),
        ),
        migrations.AlterField(
            model_name='question',
            name='question_id',
            field=models.CharField(max_length=200, validators=[labeling.names.validate_question_id]),
        ),
        migrations.AlterField(
            model_name='run',
            name='name',
            field=models.CharField(max_length=200, validators=[labeling.names.validate_run_name]),
        ),
        migrations.CreateModel(
            name='Membership',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('role', models.CharField(choices=[('lead', 'Lead'), ('reviewer', 'Reviewer'), ('viewer', 'Viewer')],
                                          default='lead', max_length=16)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                              related_name='memberships', to='labeling.project')),
                ('reviewer', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                               related_name='memberships', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['project_id', 'reviewer_id'],
                'constraints': [
                    models.UniqueConstraint(fields=('project', 'reviewer'), name='one_membership_per_reviewer'),
                    models.CheckConstraint(condition=models.Q(('role__in', ['lead', 'reviewer', 'viewer'])),
                                           name='membership_role_known'),
                ],
            },
        ),
        migrations.RunPython(members_become_leads, memberships_back),
        migrations.RemoveField(model_name='project', name='members'),
        migrations.AddField(
            model_name='project',
            name='members',
            field=models.ManyToManyField(blank=True, related_name='projects', through='labeling.Membership',
                                         to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='run',
            name='blind',
            field=models.BooleanField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='run',
            name='overlap',
            field=models.PositiveSmallIntegerField(default=1),
        ),
        migrations.CreateModel(
            name='Assignment',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('reviewer', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='assignments', to=settings.AUTH_USER_MODEL)),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='assignments', to='labeling.run')),
            ],
            options={
                'ordering': ['run_id', 'reviewer_id'],
            },
        ),
        migrations.AddField(
            model_name='run',
            name='reviewers',
            field=models.ManyToManyField(blank=True, related_name='assigned_runs', through='labeling.Assignment', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddConstraint(
            model_name='run',
            constraint=models.CheckConstraint(condition=models.Q(('overlap__gte', 1), ('overlap__lte', 5)), name='run_overlap_1_to_5'),
        ),
        migrations.AddConstraint(
            model_name='assignment',
            constraint=models.UniqueConstraint(fields=('run', 'reviewer'), name='one_assignment_per_reviewer'),
        ),
        migrations.CreateModel(
            name='Adjudication',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('value', models.CharField(choices=[('SUPPORTED', 'Supported'), ('UNSUPPORTED', 'Unsupported'), ('UNCITED', 'Uncited')], max_length=16)),
                ('reason', models.TextField()),
                ('claim_revision', models.PositiveIntegerField()),
                ('is_current', models.BooleanField(default=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('claim', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='adjudications', to='labeling.claim')),
                ('lead', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='adjudications', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['claim_id', '-created_at', '-id'],
                'constraints': [models.UniqueConstraint(condition=models.Q(('is_current', True)), fields=('claim',), name='one_current_adjudication_per_claim'), models.CheckConstraint(condition=models.Q(('value__in', ['SUPPORTED', 'UNSUPPORTED'])), name='adjudication_value_judged')],
            },
        ),
    ]
