"""Roles per project: every member gets a Membership with a role.

Existing members become leads: before roles, every member could import,
snapshot and label, which is what a lead may do.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


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
        ('labeling', '0006_names_validated_version_file_length'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
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
    ]
